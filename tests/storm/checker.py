"""The storm's one checker, over a recorded history (python3 checker.py HISTORY re-checks one).

For every key:
  - the two replays after the run (a fresh gateway without a replay cache) are byte-identical;
  - every client got that recorded answer or a documented refusal (409, 422 while another body
    held the key, 503, a transient 5xx, a dropped connection); a final answer with no record, or
    the answer of another body or key, is a violation;
  - the recorded answer is the last execution's (or the 502 of an answer too large to keep);
  - no effect ran twice, unless the history shows the documented exception between the two runs:
      * the earlier run's answer never reached a gateway (the upstream dropped the connection, or
        answered after --upstream-timeout): the key was released and a retry runs it again;
      * a gateway that sent either run was paused (SIGSTOP) or cut off the network (a network
        partition: its link down) for half its lease or more;
      * on a route without `recover = "status"`: the gateway that sent the earlier run was
        killed, drained or restarted, or it was cut off its store (a partition) or the store was
        out for half the lease or more, before the later run (the lease lapsed and a retry took
        the key over and re-sent it); or that gateway took half the lease or more to replay a
        key already recorded (a loaded machine stalled its store path: stalls.py).
    On a `status` route a lapsed key is settled by asking the status URL, never by re-sending.
    The library workers on PostgreSQL (workers.py) are judged as gateways are: a LeaseGuard key
    (`lease`) as a route without status recovery, its worker killed (wk_kill) or paused (wk_stop)
    as a gateway would be; an in-transaction key (`tx`) has no exception at all: its executions
    are the rows of storm_tx_effects read after the run, one at most, the one its answer names.
  - two forwards of one key never carry the same fence, and a key's fences grow in the order its
    forwards arrive, but for a holder paused or gone down before its forward, or a forward its
    gateway had given up on (fence_header routes);
  - a client's store-unavailable or outcome-not-recorded answer does not quote the store (its
    address or user: those go to the gateway's log);
  - an answer that reached a gateway is recorded by the end, huge ones too (or their 502).
On JetStream, a key whose only violations are those an acknowledged outcome gone from the store
leaves is counted apart, "store lost an acknowledged write", when the history shows the store lost
it (store_losses.py).
"""

import collections
import json
import re
import sys

from stalls import key_digest, stalled_between, store_path_stalls, upstream_stalls
from store_losses import FINAL_502, store_lost_writes

# What a client may get instead of the key's answer (docs/gateway.md's table).
REFUSAL_TYPES = {"key-in-flight", "store-unavailable", "outcome-not-recorded",
                 "upstream-unreachable", "upstream-bad-response", "upstream-timeout"}
# The refusals that speak of the store: a client gets a generic detail and a request id, the
# store's own words (a PostgreSQL server's user, host, port and database) go to the gateway's log
# (docs/gateway.md; issue 37, item 10). An address (host:port) or a user@host in their detail is
# a violation.
STORE_REFUSALS = {"store-unavailable", "outcome-not-recorded"}
STORE_WORDS = re.compile(r"[\w.-]+@[\w.-]+|\b\d{1,3}(?:\.\d{1,3}){3}:\d+|\blocalhost:\d+")
STORE_FAULT_PREFIXES = ("sqlite_lock", "sqlite_full", "pg_", "nats_")
# A library worker (workers.py) killed or paused counts as a gateway killed or paused would.
DEATHS = ("gw_kill", "gw_term", "gw_clock", "wk_kill")
PAUSES = ("gw_stop", "wk_stop")
STORED_ANSWER_LIMIT = 16 * 1024 * 1024


class Verdict:
    def __init__(self):
        self.keys = 0
        self.requests = 0  # every request a client or a library worker's caller sent
        self.executions = 0
        self.allowed = []  # (key, reason)
        self.violations = []  # (key, text)
        self.unsettled = []
        # (key, text): a JetStream key whose acknowledged outcome the store lost around a server's
        # SIGKILL (`store_lost_writes`): a documented limit, neither a violation nor a re-run.
        self.store_lost = []

    def violation(self, key, text):
        self.violations.append((key, text))


def overlaps(fault, start, end):
    return fault["start"] <= end and fault["end"] >= start


# Store faults come one at a time, often back to back: a disk full for 2.4 s, then the write lock
# held 1.8 s, then 2.0 s more is one outage of 6.2 s to a holder renewing its lease (the storm's
# sq-61203-k297). Faults less than this apart are counted as one outage.
OUTAGE_GAP = 0.5


def store_outages(faults):
    """The store's outages: its faults (STORE_FAULT_PREFIXES) merged where one ends less than
    OUTAGE_GAP before the next begins; each {"start", "end", "kinds"}."""
    merged = []
    for f in sorted((f for f in faults if f["kind"].startswith(STORE_FAULT_PREFIXES)),
                    key=lambda f: f["start"]):
        if merged and f["start"] - merged[-1]["end"] < OUTAGE_GAP:
            merged[-1]["end"] = max(merged[-1]["end"], f["end"])
            merged[-1]["kinds"].append(f["kind"])
        else:
            merged.append({"start": f["start"], "end": f["end"], "kinds": [f["kind"]]})
    return merged


def released_reason(prev, cur, meta, releases, upstream_timeout):
    """Whether the gateway that sent `prev` released the key at exit (a drain) because its
    upstream call had ended without an answer, its 504 never written, before `cur` ran. Its log
    names the key string by its hash alone: two tenants' keys of one string are not told apart."""
    digest = key_digest(meta)
    for r in releases:
        if r["gw"] == prev["gw"] and r["key_sha256"] == digest and \
                prev["t"] - upstream_timeout - 10 <= r["at"] <= cur["t"] + 0.05:
            return "%s released the key at exit, run %d's call over without an answer" % (
                r["gw"], prev["ex"])
    return None


def rerun_reason(prev, cur, meta, faults, lease, upstream_timeout, failures, stalls=(),
                 store_stalls=()):
    """Why `cur` may run the effect again after `prev`, or None."""
    if meta["recover"] == "tx":
        return None  # the in-transaction guard: the effect commits with the answer, or not at all
    for f in failures:
        # The gateway that sent `prev` answered its client 502/504 (and released the key)
        # before `cur` arrived: its log line carries the forwarded X-Request-Id. The upstream
        # may see a request only after the gateway gave up on it (a loaded machine).
        # A request id of one attempt ("-a<N>-") names that request alone; a client's fixed or
        # shared one is matched only to a run that arrived soon after the failure: within the
        # upstream timeout and 10 s of it, not counting the time the upstream was stalled
        # (po-4242-k13: three forwards answered 504 read together 14-18 s after, once the
        # upstream had read nothing for 15.7 s).
        late = float("inf") if "-a" in (f["xrid"] or "") else upstream_timeout + 10
        if f["gw"] == prev["gw"] and f["xrid"] == prev.get("xrid") and \
                f.get("start", f["at"]) - 0.05 <= prev["t"] <= \
                f["at"] + late + stalled_between(stalls, f["at"], prev["t"]) and \
                f["at"] <= cur["t"] + 0.05:
            return "%s answered %d for run %d (upstream failure; key released)" % (
                f["gw"], f["status"], prev["ex"])
        # The later run is a request its own gateway had given up on (answered 502/504, the key
        # released) before the earlier run: a starved upstream read it late, after a retry ran.
        if f["gw"] == cur["gw"] and f["xrid"] == cur.get("xrid") and \
                f.get("start", f["at"]) - 0.05 <= cur["t"] <= \
                f["at"] + late + stalled_between(stalls, f["at"], cur["t"]) and \
                f["at"] <= prev["t"] + 0.05:
            return "run %d is a request %s had answered %d before run %d (read late)" % (
                cur["ex"], f["gw"], f["status"], prev["ex"])
    if prev["mode"] == "drop":
        return "the upstream dropped run %d's connection after its effect" % prev["ex"]
    if prev["mode"] == "slow" and prev["delay_ms"] >= 0.9 * upstream_timeout * 1000:
        return "run %d answered after --upstream-timeout" % prev["ex"]
    window = (prev["t"], cur["t"])
    senders = {prev["gw"], cur["gw"]}
    for f in faults:
        if not overlaps(f, *window):
            continue
        if f["kind"].startswith(PAUSES) and f["gw"] in senders and \
                f["end"] - f["start"] >= lease / 2:
            return "%s was paused %.1fs (lease %.1fs)" % (f["gw"], f["end"] - f["start"], lease)
        # Cut off the network, a holder is as good as paused: its lease lapses, and the request
        # it had sent into the cut link reaches the upstream when the link returns (the kernel
        # sends it again), after a retry elsewhere took the key over.
        if f["kind"].startswith("net_isolate") and f["gw"] in senders and \
                f["end"] - f["start"] >= lease / 2:
            return "%s was cut off the network %.1fs (lease %.1fs)" % (
                f["gw"], f["end"] - f["start"], lease)
        if meta["recover"] == "status":
            continue
        # Cut off its store alone, the holder's lease lapses as in a store outage, but for it only.
        if f["kind"].startswith("net_store") and f["gw"] == prev["gw"] and \
                f["end"] - f["start"] >= lease / 2:
            return "%s, which sent run %d, was cut off its store %.1fs (lease %.1fs)" % (
                f["gw"], prev["ex"], f["end"] - f["start"], lease)
        # The upstream may see a dead gateway's request late: a death up to the upstream
        # timeout (and a loaded machine's 10 s) before the run still counts.
        if f["kind"] in DEATHS and f["gw"] == prev["gw"] and \
                window[0] - upstream_timeout - 10 <= f["start"] <= window[1]:
            return "%s, which sent run %d, went down (%s)" % (f["gw"], prev["ex"], f["kind"])
    if meta["recover"] == "status":
        return None
    for stall in store_stalls:
        took = stall["end"] - stall["start"]
        if stall["gw"] == prev["gw"] and took >= lease / 2 and overlaps(stall, *window):
            return "%s, which sent run %d, took %.1fs to replay a recorded key (lease %.1fs)" % (
                stall["gw"], prev["ex"], took, lease)
    for outage in store_outages(faults):
        if overlaps(outage, *window) and outage["end"] - outage["start"] >= lease / 2:
            return "the store was out %.1fs (%s; lease %.1fs)" % (
                outage["end"] - outage["start"], ", ".join(outage["kinds"]), lease)
    return None


def check(records):
    run = next(r for r in records if r["ev"] == "run")
    lease, upstream_timeout = run["lease"], run["upstream_timeout"]
    faults = [r for r in records if r["ev"] == "fault"]
    failures = [r for r in records if r["ev"] == "upstream_failure"]
    releases = [r for r in records if r["ev"] == "released_at_exit"]
    stalls = upstream_stalls(records, failures)
    keys = collections.OrderedDict()
    by_key = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in records:
        if r["ev"] == "key":
            keys[r["key"]] = r
        elif "key" in r:
            by_key[r["key"]][r["ev"]].append(r)
    store_stalls = store_path_stalls(records, keys)
    v = Verdict()
    v.requests = sum(1 for r in records if r["ev"] == "send")
    for name, meta in keys.items():
        v.keys += 1
        events = by_key[name]
        execs = sorted(events["exec"], key=lambda e: e["t"])
        v.executions += len(execs)
        check_fences(v, name, events, faults, failures, lease, upstream_timeout)
        recorded = check_replays(v, name, events)
        for prev, cur in zip(execs, execs[1:]):
            reason = rerun_reason(prev, cur, meta, faults, lease, upstream_timeout, failures,
                                  stalls, store_stalls)
            if reason is None:
                reason = released_reason(prev, cur, meta, releases, upstream_timeout)
            if reason is None:
                v.violation(name, "ran %d times: run %d (%s at %.2fs) after run %d (%s at %.2fs) "
                            "on a %s route with nothing in the history that allows it" %
                            (len(execs), cur["ex"], cur["gw"], cur["t"], prev["ex"], prev["gw"],
                             prev["t"], meta["recover"] if meta["recover"] != "off" else
                             "recover=off"))
            else:
                v.allowed.append((name, reason))
        check_answers(v, name, events, recorded, execs, upstream_timeout, failures)
    if run.get("store") == "nats":
        store_lost_writes(v, faults, by_key, keys, run.get("cache_off") or {},
                          timer_sync=run.get("nats_sync") != "always")
    return v


def fence_number(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def stalled(forward, faults, failures, lease, upstream_timeout):
    """Whether the gateway that sent `forward` was paused, cut off the network or went down
    shortly before it, or had given up on it (its own 502/504, the key released): a holder whose
    lease lapsed meanwhile may forward under its older fence after a later holder did (the fence
    is what lets the upstream refuse it), and a request a gateway gave up on or died with may
    reach the upstream late."""
    since = forward["t"] - lease - upstream_timeout - 10
    if any(f["gw"] == forward["gw"] and (f["kind"].startswith(PAUSES + ("net_isolate",)) or
                                        f["kind"] in DEATHS) and
           f["start"] <= forward["t"] and f["end"] >= since for f in faults):
        return True
    return any(f["gw"] == forward["gw"] and f["xrid"] == forward.get("xrid") and
               f.get("start", f["at"]) - 0.05 <= forward["t"] for f in failures)


def check_fences(v, name, events, faults, failures, lease, upstream_timeout):
    """Two forwards of a key never carry one fence, and per key the fences grow in the order the
    forwards reach the upstream (docs/distributed-store.md "Fences": across processes, releases
    and takeovers), but for a holder that was stalled before its forward (`stalled`)."""
    seen = {}
    top = None
    for a in sorted(events["exec"] + events["arrival"], key=lambda e: e["t"]):
        fence = a.get("fence")
        if fence is None:
            continue
        number = fence_number(fence)
        if fence in seen:
            v.violation(name, "two forwards carried fence %s (%s at %.2fs and %s at %.2fs)" %
                        (fence, seen[fence]["gw"], seen[fence]["t"], a["gw"], a["t"]))
        elif top is not None and number is not None and number < top[0] and \
                not stalled(a, faults, failures, lease, upstream_timeout):
            v.violation(name, "fences went down: %s forwarded fence %s at %.2fs after %s forwarded "
                        "fence %s at %.2fs (%s was neither paused nor down, nor had it given "
                        "up on it)" %
                        (a["gw"], fence, a["t"], top[1]["gw"], top[1]["fence"], top[1]["t"],
                         a["gw"]))
        seen[fence] = a
        if number is not None and (top is None or number > top[0]):
            top = (number, a)


def check_replays(v, name, events):
    """The key's recorded answer: (status, body digest, fields) or None when nothing is recorded."""
    replays = sorted(events["replay"], key=lambda e: e["n"])
    if len(replays) < 2:
        v.violation(name, "no replay after the run (%d)" % len(replays))
        return None
    a, b = replays[0], replays[1]
    if a.get("unrecorded") and b.get("unrecorded"):
        return None
    if (a["status"], a["body"]) != (b["status"], b["body"]) or a.get("unrecorded"):
        v.violation(name, "replays differ: %s %s then %s %s" %
                    (a["status"], a["body"], b["status"], b["body"]))
    if a.get("replayed") != "true":
        v.violation(name, "the replay after the run was not marked Idempotent-Replayed (%s %s)" %
                    (a["status"], a.get("type")))
    return a


def check_answers(v, name, events, recorded, execs, upstream_timeout, failures):
    for ans in events["answer"]:
        status, ptype = ans["status"], ans.get("type")
        who = "client %d attempt %d" % (ans["client"], ans["attempt"])
        if ptype in STORE_REFUSALS and STORE_WORDS.search(ans.get("detail") or ""):
            v.violation(name, "%s got %s %s quoting the store (%s): a client's refusal names no "
                        "store address or user" % (who, status, ptype,
                                                    STORE_WORDS.search(ans["detail"]).group(0)))
        if status is None or ptype in REFUSAL_TYPES:
            continue
        if ptype is None and status >= 500 and ans.get("ex") is None:
            continue  # the upstream's own transient answer (mode fail)
        if ptype == "internal":
            v.violation(name, "%s got 500 internal" % who)
            continue
        if status == 422 and ptype == "key-reused":
            # Documented refusal: another body held the key then (a transient answer may have
            # released it since, so the recorded request can be this very body).
            continue
        if recorded is None:
            v.violation(name, "%s got %s %s but the store has no answer for the key" %
                        (who, status, ptype or ans.get("ex")))
            continue
        if (status, ans["body"]) != (recorded["status"], recorded["body"]):
            v.violation(name, "%s got %s (%s) but the key's recorded answer is %s (%s)" %
                        (who, status, ptype or "ex %s" % ans.get("ex"), recorded["status"],
                         recorded.get("type") or "ex %s" % recorded.get("ex")))
        if ans.get("request") not in (None, ans["sent"]):
            v.violation(name, "%s got the answer to another body under its key" % who)
        if ans.get("body_key") not in (None, name):
            v.violation(name, "%s got the answer of another key (%s)" % (who, ans["body_key"]))
    if recorded is None:
        # A huge answer reached its gateway too: it is recorded, or its 502 upstream-answer-not-kept
        # is (an answer the store refuses for ever is no reason to leave the key unsettled:
        # issue 37, item 4).
        kept = [e for e in execs if e["mode"] != "drop" and
                not (e["mode"] == "slow" and e["delay_ms"] >= 900 * upstream_timeout) and
                not any(f["gw"] == e["gw"] and f["xrid"] == e.get("xrid") and
                        f["at"] >= e["t"] - upstream_timeout - 5 for f in failures)]
        if kept:
            v.unsettled.append(name)
            v.violation(name, "never settled: run %d's answer reached a gateway, yet after the "
                        "settling time the store has no answer for the key" % kept[-1]["ex"])
        return
    if recorded.get("ex") is not None:
        if not execs:
            v.violation(name, "recorded ex %s, but the upstream never ran the key" %
                        recorded["ex"])
        elif recorded["ex"] != execs[-1]["ex"] and not any(
                k == name for k, _ in v.allowed):
            v.violation(name, "the recorded answer is run %s's, not the last run's (%s)" %
                        (recorded["ex"], execs[-1]["ex"]))
    elif recorded.get("type") == "upstream-answer-not-kept":
        # Too large, or too slow after its head (docs/gateway.md): a slow run may be either, and
        # on a loaded machine a run of any mode, when the gateway that sent it logged its 502.
        last = execs[-1] if execs else None
        if last is None or (last["mode"] not in ("huge", "slow") and not any(
                f["gw"] == last["gw"] and f["xrid"] == last.get("xrid") and f["status"] == 502 and
                f.get("start", f["at"]) - 0.05 <= last["t"] <= f["at"] + 1 for f in failures)):
            v.violation(name, "recorded 502 upstream-answer-not-kept, but the last run's answer "
                        "was neither too large nor slow")
    elif recorded.get("type") not in FINAL_502:
        if recorded["status"] < 500 and recorded["status"] != 422:
            v.violation(name, "recorded %s %s, which no run answered" %
                        (recorded["status"], recorded.get("type")))


def summary(v, seed, fault_counts):
    line = "storm: seed %s, %d keys, %d executions, %d allowed re-runs, %d violations" % (
        seed, v.keys, v.executions, len(v.allowed), len(v.violations))
    if v.store_lost:
        line += (", %d store lost an acknowledged write (JetStream's, not idem's: "
                 "docs/distributed-store.md)" % len(v.store_lost))
    faults = ", ".join("%s %d" % (k, n) for k, n in sorted(fault_counts.items()))
    return line + ("\nstorm: faults injected: " + faults if faults else "")


def main(path):
    import history
    records = history.read(path)
    v = check(records)
    counts = collections.Counter(r["kind"] for r in records if r["ev"] == "fault")
    seed = next((r["seed"] for r in records if r["ev"] == "run"), "?")
    for key, text in v.violations:
        print("storm: VIOLATION %s: %s" % (key, text))
    for key, text in v.store_lost:
        print("storm: STORE LOST A WRITE %s: %s" % (key, text))
    print(summary(v, seed, counts))
    return 1 if v.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
