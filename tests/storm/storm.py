"""A seeded storm of clients and faults against real `idem serve` gateways on each store, checked
by one checker over the recorded history (scripts/storm.sh is the front door; docs/testing.md).

  python3 tests/storm/storm.py --idem build/dev/src/cli/idem [--seed N] [--minutes M]
                               [--stores sqlite,postgres,nats] [--profile short|long]
"""

import argparse
import collections
import datetime
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

import checker
import history as history_mod
import netns
from clients import Load, digest, post, problem_type, request_headers, upstream_fields
from cluster import Gateway, PostgresStore, StoreNotReady
from nats_store import NatsStore, nats_server_setup
from nemesis import Nemesis
from store_faults import DiskSqliteStore, StoreFaults
from plan import RunPlan
from upstream import Upstream
from worker_load import LibraryWorkers

PROFILES = {"short": 0.6, "long": 20.0}  # minutes of clients and faults per store
STORES = ["sqlite", "postgres", "nats"]


def open_store(name, work, seed, setup):
    if name == "sqlite":
        return DiskSqliteStore(work)  # on a tmpfs of its own, for the full disk
    if name == "postgres":
        return PostgresStore(work)
    return NatsStore(work, seed, setup)


def replay_keys(plan, keys, gateway, history):
    """Every key's answer from the checker's gateway, eight keys at a time."""
    deadline = history.now() + 3 * plan.lease + 15
    threads = []
    for chunk in range(8):
        part = keys[chunk::8]
        t = threading.Thread(target=lambda p=part: [replay_key(plan, k, gateway, history,
                                                               deadline) for k in p])
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


def replay_key(plan, key, gateway, history, deadline):
    """Asks the checker's gateway (no replay cache, no completer) for the key's answer twice."""
    changed = False
    for n in (1, 2):
        while True:
            body = json.dumps(key.body(changed), sort_keys=True).encode()
            headers = request_headers(plan, key, "replay-%s-%d" % (key.name, n), "ok", body)
            status, answer_headers, data = post(gateway.port, "/%s/charge" % key.route, body,
                                                headers, 30)
            ptype = problem_type(data) if status is not None and answer_headers.get(
                "content-type", "").startswith("application/problem+json") else None
            if status == 422 and not changed:
                changed = True
                continue
            if history.now() < deadline and (status is None or ptype in (
                    "key-in-flight", "store-unavailable", "outcome-not-recorded")):
                time.sleep(0.3)
                continue
            fields = {}
            if status is not None and not ptype:
                fields = upstream_fields(data)
            history.record("replay", key=key.name, n=n, status=status, type=ptype,
                           body=digest(data) if status is not None else data, replayed=answer_headers.get(
                               "idempotent-replayed"),
                           unrecorded=(status == 503 and data == b'{"storm":"not recorded"}'),
                           **fields)
            break


RELEASED_AT_EXIT = re.compile(r"released key sha256:([0-9a-f]{16}) \(fence \d+; its upstream "
                              r"outcome was transient\)")


# The line cluster.Gateway writes into the gateway's log at each start, with the offset of the
# wall clock it gave it (libfaketime; 0 without a step).
GATEWAY_STARTED = re.compile(r"==== storm: start clock ([+-][0-9.]+)s ")


# A replay that took this long (seconds) goes into the history as a `slow_replay`.
SLOW_REPLAY = 0.5


def record_gateway_log(gateways, history):
    """Puts each gateway's 502/504 upstream failures in the history (its JSON request lines at
    --log-level debug: decision upstream_error): the gateway's own word that an upstream run's
    answer was not kept and the key released, whatever the upstream's timing looked like. Its
    replays that took SLOW_REPLAY or more go in too, as `slow_replay`."""
    for g in gateways:
        clock_offset = 0.0  # a gateway started under a stepped clock stamps its lines with it
        for line in g.log_lines():
            started = GATEWAY_STARTED.match(line)
            if started:
                clock_offset = float(started.group(1))
                continue
            released = RELEASED_AT_EXIT.search(line) if line.startswith("{") else None
            if not line.startswith("{") or ('"upstream_error"' not in line and not released and
                                            '"decision":"replayed"' not in line):
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            wall = datetime.datetime.strptime(doc["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            at = wall - clock_offset - history.wall0
            if released:
                # A drain released a key whose upstream call had ended without an answer (its
                # 504 never written): the log names the key by its hash, not the request.
                history.record("released_at_exit", gw=g.name, key_sha256=released.group(1),
                               at=round(at, 4))
                continue
            took = doc.get("duration_ms", 0) / 1000.0
            if doc.get("decision") == "replayed" and took >= SLOW_REPLAY:
                # The gateway's store path stalled (stalls.store_path_stalls weighs it).
                history.record("slow_replay", gw=g.name, key_sha256=doc.get("key_sha256"),
                               at=round(at, 4), start=round(at - took, 4))
                continue
            if doc.get("decision") != "upstream_error" or doc.get("status") not in (502, 504):
                continue
            history.record("upstream_failure", gw=g.name, xrid=doc.get("request_id"),
                           status=doc["status"], at=round(at, 4),
                           start=round(at - took, 4))


def merge(path, records):
    """One history file: the storm's records and the upstream's, in the order of their times."""
    merged = sorted(history_mod.read(path) + records, key=lambda r: r["t"])
    with open(path, "w", encoding="utf-8") as f:
        for r in merged:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def run_store(args, name, out):
    plan = RunPlan(args.seed, name, args.minutes * 60, long_profile=args.profile == "long")
    work = tempfile.mkdtemp(prefix="idem-storm-%s-" % name)
    path = os.path.join(work, "history.jsonl")
    history = history_mod.History(path)
    setup = nats_server_setup() if name == "nats" else {}
    history.record("run", seed=args.seed, store=name, lease=plan.lease,
                   upstream_timeout=plan.upstream_timeout, gateways=plan.gateways,
                   tenants=plan.tenants, routes=plan.routes, faults=plan.faults,
                   recover_interval=plan.recover_interval, seconds=plan.seconds,
                   drain_timeout=plan.drain_timeout,
                   cache_off={"g%d" % (i + 1): off for i, off in enumerate(plan.cache_off)},
                   **setup)
    print("storm [%s]: %d gateway(s), lease %.0fs, drain %.0fs, tenants %s, %d faults drawn, "
          "%.0fs of load; work in %s" % (name, plan.gateways, plan.lease, plan.drain_timeout,
                                         plan.tenants, len(plan.faults), plan.seconds, work),
          file=out, flush=True)
    if setup:
        print("storm [nats]: nats-server %s, %s" % (
            setup["nats_server"], "every write fsynced (sync_interval: always)"
            if setup["nats_sync"] == "always" else "writes fsynced on a timer (a SIGKILLed "
            "server may lose acknowledged writes: counted as the store's, not violations)"),
            file=out, flush=True)
    upstream = Upstream(work)
    store = open_store(name, work, args.seed, setup)
    if name == "sqlite" and not store.mounted:
        print("storm [sqlite]: SQLite disk full: skipped (mounting a tmpfs was refused: %s)" %
              store.refused, file=out, flush=True)
    gateways = []
    actors = None  # the library workers (PostgreSQL, --worker)
    problems = []
    unjudged = False  # the store never healed after the load: no key read back
    spaces = netns.Namespaces() if args.partitions else None
    if spaces is not None:
        store.trust(spaces.prefix + ".0/24")
    try:
        for i in range(plan.gateways):
            g = Gateway(args.idem, "g%d" % (i + 1), plan, store.uri, upstream.port, work,
                        plan.cache_off[i],
                        netns=spaces.make(i + 1) if spaces is not None else None)
            g.start()
            gateways.append(g)
        if name == "postgres" and args.worker:
            actors = LibraryWorkers(args.worker, plan, store.uri, upstream.port, work, history)
            actors.start()
            print("storm [%s]: library workers: %s" % (name, actors.describe()), file=out,
                  flush=True)
        stop = threading.Event()
        nemesis = Nemesis(plan, history, gateways, store, stop)
        load = Load(plan, gateways, history)
        history.restart_clock()  # the schedule's clock starts with the load
        history.record("clock", wall0=history.wall0, mono0=history.t0)
        nemesis.start()
        extra = StoreFaults(plan, history, store, nemesis)  # full disk, leader step-down
        extra_thread = threading.Thread(target=extra.run, args=(stop,), daemon=True)
        extra_thread.start()
        load.start()
        if actors is not None:
            actors.start_load()
        load.join()
        if actors is not None:
            actors.join_load()
            actors.stop_load_workers()
        stop.set()
        nemesis.join()
        extra_thread.join()
        problems += nemesis.problems + extra.problems
        for g in gateways:
            g.signal(signal.SIGCONT)
            status = g.terminate()
            if status not in (0, None):
                problems.append("gateway %s: SIGTERM at the end gave exit status %s" %
                                (g.name, status))
        final = Gateway(args.idem, "final", plan, store.uri, upstream.port, work, True,
                        recover=False)
        # Again until the store answers, if it is still healing (Gateway.start): a JetStream
        # cluster after a long-profile quorum loss has taken over a minute.
        try:
            final.start(heal_wait=180)
        except StoreNotReady as error:
            # Nothing can be read back, so nothing is judged: one violation says why (seed
            # 20261209 on nats-server 2.10.27: no meta leader three minutes after the load).
            problems.append("the store did not heal within 180 s after the load, so no key was "
                            "read back and the run is not judged: %s" % error)
            unjudged = True
        if not unjudged:
            replay_keys(plan, list(load.keys), final, history)
            final.terminate()
        record_gateway_log(gateways, history)
        fault_counts = dict(nemesis.counts)
        fault_counts.update(extra.counts)
        if actors is not None:
            actors.replay_and_count(history.now() + 2 * plan.lease + 10)
            print("storm [%s]: %s" % (name, actors.summary()), file=out, flush=True)
            fault_counts.update(actors.counts)
            problems += actors.problems
    finally:
        for g in gateways:
            g.kill()
        if actors is not None:
            actors.kill()
        if spaces is not None:
            spaces.remove()
        store.stop()
        upstream.stop()
        history.close()
    leaders = []
    if name == "nats":
        # When each server took the bucket's stream over (its own log), for the analysis of a
        # lost outcome (FINDINGS.md, seed 20261208).
        leaders = [{"ev": "stream_leader", "node": node, "t": t} for t, node in
                   store.leader_changes(history.wall0)]
        for line in store.report():
            print("storm [nats]: %s" % line, file=out, flush=True)
    merge(path, upstream.records(history.t0) + leaders)
    verdict = checker.Verdict() if unjudged else checker.check(history_mod.read(path))
    for p in problems:
        verdict.violation("-", p)
    return plan, verdict, fault_counts, work, path


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--minutes", type=float, default=None,
                        help="minutes of clients and faults per store")
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short")
    parser.add_argument("--idem", required=True)
    parser.add_argument("--worker", default=None,
                        help="idem-storm-worker (tests/storm/worker): the library workers on "
                             "PostgreSQL")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "big") % 1000000
    if args.minutes is None:
        args.minutes = PROFILES[args.profile]
    stores = [s for s in args.stores.split(",") if s]
    for s in stores:
        if s not in STORES:
            print("storm: unknown store '%s' (sqlite, postgres, nats)" % s, file=sys.stderr)
            return 2
    out = sys.stdout
    print("storm: seed %d, stores %s, %.1f minute(s) each" % (args.seed, ",".join(stores),
                                                             args.minutes), flush=True)
    why = netns.unavailable()
    args.partitions = why is None
    if why is None:
        print("storm: network partitions: each gateway in a network namespace of its own, cut "
              "off the network or off its store", flush=True)
    else:
        print("storm: network partitions: skipped (%s)" % why, flush=True)
    if "postgres" in stores and not args.worker:
        print("storm: library workers: skipped (no idem-storm-worker program: build the target "
              "idem-storm-worker, or pass --worker PATH)", flush=True)
    started = time.monotonic()
    totals = checker.Verdict()
    faults = collections.Counter()
    failed = []
    for s in stores:
        t0 = time.monotonic()
        plan, verdict, counts, work, path = run_store(args, s, out)
        faults.update(counts)
        totals.keys += verdict.keys
        totals.requests += verdict.requests
        totals.executions += verdict.executions
        totals.allowed += verdict.allowed
        totals.violations += [(s, k, t) for k, t in verdict.violations]
        totals.store_lost += [(s, k, t) for k, t in verdict.store_lost]
        for key, text in verdict.store_lost:
            print("storm: STORE LOST A WRITE [%s] %s: %s" % (s, key, text), flush=True)
        for key, text in verdict.violations[:25]:
            print("storm: VIOLATION [%s] %s: %s" % (s, key, text), flush=True)
        if len(verdict.violations) > 25:
            print("storm: ... and %d more violations" % (len(verdict.violations) - 25))
        lost = (", %d store lost an acknowledged write" % len(verdict.store_lost)
                if verdict.store_lost else "")
        print("storm [%s]: %d keys, %d executions, %d allowed re-runs, %d violations%s, "
              "%d unsettled, %.0fs; %d requests sent, %d faults injected" % (
                  s, verdict.keys, verdict.executions, len(verdict.allowed),
                  len(verdict.violations), lost, len(verdict.unsettled), time.monotonic() - t0,
                  verdict.requests, sum(counts.values())), flush=True)
        if verdict.violations:
            failed.append((s, path))
        elif verdict.store_lost:
            print("storm: history of the store's lost writes kept in %s" % path, flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(checker.summary(totals, args.seed, faults))
    print("storm: %.0fs in all" % (time.monotonic() - started))
    if failed:
        for s, path in failed:
            print("storm: FAILED on %s; history kept in %s" % (s, path))
        server = os.environ.get("IDEM_NATS_SERVER")
        print("storm: replay: bash scripts/storm.sh --seed %d --profile %s --minutes %g "
              "--stores %s%s" % (args.seed, args.profile, args.minutes,
                                 ",".join(s for s, _ in failed),
                                 " --nats-server %s" % server if server and
                                 any(s == "nats" for s, _ in failed) else ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
