"""Which lost outcomes are the store's: JetStream keys whose acknowledged outcome was gone after
the run, when the history shows the store lost it (the checker counts them apart from
violations: `STORE LOST A WRITE`)."""

import collections
import re

# The 502s that are a key's final answer (kept for good): an outcome like any other.
FINAL_502 = {"upstream-answer-not-kept", "recovery-attempts-exhausted"}


# nats-server before 2.10 neither fsyncs each write nor can be told to: a server SIGKILLed soon
# after it acknowledged an outcome came back without it and, once it led the stream, the key's
# record was its claim again (docs/distributed-store.md, "Not on disk"; FINDINGS.md, seeds 191079,
# 539051, 157255: kills from just before the answer to 4.3 s after it). Only a node SIGKILL in this window explains a
# lost outcome; anything else stays a violation.
LOST_WRITE_WINDOW = 5.0
NODE_KILLS = ("nats_kill", "nats_crash_two")
# The violations an acknowledged outcome gone from the store leaves: the answer missing or another
# one recorded, and a later run (the claim found again, its lease lapsed, taken over).
LOST_OUTCOME = re.compile(r"but the store has no answer for the key$|but the key's recorded "
                          r"answer is |^never settled: ")
RERUN_AT = re.compile(r"^ran \d+ times: run \d+ \(\S+ at ([\d.]+)s\)")


def lost_write_reason(events, texts, kills):
    """Why a JetStream key's violations (`texts`) are the store's lost write, or None: a client got
    an outcome the key's record does not hold, a node was SIGKILLed between that run and
    LOST_WRITE_WINDOW after the first such answer, and every violation of the key is one a lost
    outcome leaves (a later run only after the kill)."""
    replays = sorted(events["replay"], key=lambda e: e["n"])
    recorded = None if not replays or replays[0].get("unrecorded") else \
        (replays[0]["status"], replays[0]["body"])
    lost = [a for a in events["answer"] if a["status"] is not None and
            (a.get("ex") is not None or a.get("type") in FINAL_502) and
            (a["status"], a["body"]) != recorded]
    if not lost:
        return None
    first = min(lost, key=lambda a: a["t"])
    runs = [e["t"] for e in events["exec"] if e["t"] <= first["t"]]
    if not runs:
        return None
    kill = next((f for f in sorted(kills, key=lambda f: f["start"])
                 if max(runs) <= f["start"] <= first["t"] + LOST_WRITE_WINDOW), None)
    if kill is None:
        return None
    for text in texts:
        rerun = RERUN_AT.match(text)
        if not (rerun and float(rerun.group(1)) >= kill["start"]) and \
                not (rerun is None and LOST_OUTCOME.search(text)):
            return None
    return ("store lost an acknowledged write: JetStream server killed within %.0fs of the write "
            "(%s at %.2fs; the run at %.2fs, its answer %s %s first at %.2fs; "
            "docs/distributed-store.md)" %
            (LOST_WRITE_WINDOW, kill["kind"], kill["start"], max(runs), first["status"],
             first.get("type") or "ex %s" % first.get("ex"), first["t"]))


def read_back_reason(meta, events, texts, cache_off):
    """Why a key's violations (`texts`) are the store's lost write, on any server, or None: the
    lost outcome was read back from the store after it was answered, and no request for the key
    reached a gateway after that read until the loss showed. Without a request idem writes nothing
    to a completed key of a route with no completer (`recover` off), so only the store can have
    lost it (FINDINGS.md, seed 8: nats-server 2.9.10; seed 20261208: 2.10.27). A read is the
    store's when the request was sent after the outcome's first answer (so it waited on no run)
    to a gateway without a replay cache, or to one that had not seen the key before."""
    if meta.get("recover") != "off":
        return None
    replays = sorted(events["replay"], key=lambda e: e["n"])
    if not replays or not replays[0].get("unrecorded"):
        return None  # the key's record is gone or is its claim again, not another answer
    sends = sorted(events["send"], key=lambda e: e["t"])
    sent = {(e["client"], e["attempt"]): e for e in sends}
    answered = sorted((a for a in events["answer"] if a["status"] is not None and
                       a.get("ex") is not None), key=lambda a: a["t"])
    if not answered:
        return None
    first = answered[0]
    outcome = (first["status"], first["body"])
    if any((a["status"], a["body"]) != outcome for a in answered):
        return None
    runs = sorted((e for e in events["exec"] if e["t"] <= first["t"]), key=lambda e: e["t"])
    if not runs or any(e["t"] > first["t"] for e in events["exec"]):
        return None  # a later run: not this rule's (the read-back settles no re-run)
    seen = {runs[-1]["gw"]}
    read = None
    for a in answered:
        send = sent.get((a["client"], a["attempt"]))
        if send is None:
            continue
        if a.get("replayed") == "true" and send["t"] > first["t"] and (
                cache_off.get(send["gw"]) or send["gw"] not in seen):
            read = (a, send)
        seen.add(send["gw"])
    if read is None:
        return None
    if any(e["t"] > read[1]["t"] for e in sends):
        return None
    if not all(LOST_OUTCOME.search(text) for text in texts):
        return None
    return ("store lost an acknowledged write: run %s's answer %s was read back from the store at "
            "%.2fs (%s, %s), and no request for the key came after it; the store's answer at "
            "%.2fs had lost it (FINDINGS.md, seed 8)" % (
                first["ex"], first["status"], read[0]["t"], read[1]["gw"],
                "no replay cache" if cache_off.get(read[1]["gw"]) else "which had not seen the key",
                replays[0]["t"]))


def store_lost_writes(v, faults, by_key, keys, cache_off=None, timer_sync=True):
    """Moves the violations of each key `read_back_reason` or (servers that fsync on a timer)
    `lost_write_reason` explains to v.store_lost."""
    kills = [f for f in faults if f["kind"] in NODE_KILLS]
    texts = collections.defaultdict(list)
    for key, text in v.violations:
        texts[key].append(text)
    for key, ts in texts.items():
        if key not in by_key:
            continue
        reason = read_back_reason(keys.get(key, {}), by_key[key], ts, cache_off or {})
        if reason is None and timer_sync:
            reason = lost_write_reason(by_key[key], ts, kills)
        if reason is not None:
            v.violations = [(k, t) for k, t in v.violations if k != key]
            v.unsettled = [k for k in v.unsettled if k != key]
            v.store_lost.append((key, reason))
