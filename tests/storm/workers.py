"""The storm's library workers on PostgreSQL (issue 38 item 1): idem-storm-worker processes
(tests/storm/worker) using libidem as a service of one's own does, beside the gateways on the
same store.

  lease  LeaseGuard: the key is claimed with a lease; the effect is a POST to the storm's counting
         upstream (/wN/lease) carrying the claim's fence, so the upstream records each execution
         in the history exactly as it records the gateways' forwards; the answer is recorded
         with the fence. A holder killed or paused past its lease lets the next arrival take the
         key over and run it again: the documented exception, which the checker allows.
  tx     Guard::Run: the effect is a row of storm_tx_effects written in the same PostgreSQL
         transaction as the key's stored answer. No exception: the table, read after the run,
         must hold at most one row per key, the one the stored answer names.

Keys, their clients (several per key, at once and later, to any worker) and the workers' faults
(SIGKILL and restart, SIGSTOP shorter and longer than the lease) are drawn from the seed on
streams of their own, so the gateways' draws stay those of earlier seeds."""

import json
import os
import signal
import subprocess
import threading
import time

from cluster import ChildProcess, StoreNotReady
from plan import rng_for

RETRYABLE_TYPES = {"key-in-flight", "store-unavailable", "outcome-not-recorded",
                   "upstream-unreachable", "upstream-timeout"}
NOT_RECORDED = '{"storm":"not recorded"}'


class WorkerPlan:
    """How many workers of each kind, how many keys at once, and the workers' fault schedule."""

    def __init__(self, run):
        r = rng_for(run.seed, run.store, "workers")
        self.lease_workers = r.randint(2, 3)
        self.tx_workers = r.randint(1, 2)
        self.threads = r.randint(3, 6)
        self.faults = []
        f = rng_for(run.seed, run.store, "worker-nemesis")
        t = f.uniform(1.5, 3.5)
        count = self.lease_workers + self.tx_workers
        while t < run.seconds - 2:
            kind = f.choice(["wk_kill", "wk_kill", "wk_kill", "wk_stop_short", "wk_stop_long"])
            duration = {"wk_kill": f.uniform(0.2, 1.5),
                        "wk_stop_short": f.uniform(0.15, 0.3) * run.lease,
                        "wk_stop_long": f.uniform(1.2, 1.6) * run.lease}[kind]
            self.faults.append({"at": round(t, 3), "kind": kind, "worker": f.randrange(count),
                                "duration": round(duration, 3)})
            t += duration + f.uniform(1.5, 4.0)


class WorkerKey:
    """One logical key of the library workers: its guard (lease or tx) and its clients."""

    def __init__(self, run, wplan, index):
        r = rng_for(run.seed, run.store, "wkey", index)
        self.index = index
        self.name = "%s-%d-w%d" % (run.store[:2], run.seed % 100000, index)
        self.route = r.choice(["lease", "tx"])
        self.amount = r.randint(1, 10**6)
        workers = wplan.lease_workers if self.route == "lease" else wplan.tx_workers
        modes = (["ok", "slow", "late", "fail", "drop"], [60, 25, 3, 6, 6]) \
            if self.route == "lease" else (["ok", "slow", "fail"], [65, 25, 10])
        first_mode = r.choices(*modes)[0]
        xrid = r.choice(["fresh", "fixed", "shared"])
        self.clients = []
        for c in range(r.choices([1, 2, 3, 4], weights=[2, 4, 3, 2])[0]):
            self.clients.append({
                "start": 0.0 if c == 0 or r.random() < 0.5 else r.uniform(0.1, 2.0 * run.lease),
                "honour_retry_after": r.random() < 0.6,
                "xrid": xrid,
                "changed_body": c > 0 and r.random() < 0.1,
                "timeout": r.choice([1.0, 3.0, 8.0, 30.0]),
                "sticky": r.random() < 0.5,
                "first_worker": r.randrange(workers),
                "first_mode": first_mode if c == 0 or r.random() < 0.5 else "ok",
                "seed": r.randrange(1 << 30),
            })

    def body(self, changed):
        return json.dumps({"amount": self.amount + (1 if changed else 0), "currency": "eur"},
                          sort_keys=True)


class WorkerProcess(ChildProcess):
    """One idem-storm-worker: request lines on its stdin, answer lines on its stdout."""

    def __init__(self, program, name, mode, store_uri, upstream_port, run, work):
        self.name = name
        self.mode = mode
        self.cmd = [program, "--store", store_uri, "--mode", mode, "--name", name,
                    "--upstream-port", str(upstream_port),
                    "--lease-ms", str(int(run.lease * 1000)),
                    "--upstream-timeout-ms", str(int(run.upstream_timeout * 1000))]
        self.log = os.path.join(work, "%s.log" % name)
        self.proc = None
        self.lock = threading.Lock()
        self.pending = {}
        self.next_id = 0
        self.on_failure = None  # called with (worker, pending entry, status) for a 502/504

    def start(self, store_wait=60):
        """Starts the worker; again while it exits because its store is out (a restart drawn
        while PostgreSQL is crashed: seed 20261205 saw `UNAVAILABLE ... retry` at start), for
        `store_wait` seconds at most."""
        proc = self.start_while_store_out(self.start_once, store_wait, 0.5)
        pending = {}  # this process's requests without an answer yet
        with self.lock:
            self.proc = proc
            self.pending = pending
        threading.Thread(target=self.read_answers, args=(proc, pending), daemon=True).start()

    def start_once(self):
        with open(self.log, "a") as log:
            log.write("==== storm: start %s\n" % " ".join(self.cmd))
            log.flush()
            proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=log, text=True, bufsize=1)
        if proc.stdout.readline().strip() == "ready":
            return proc
        proc.kill()
        proc.wait()
        error = StoreNotReady if self.store_refused() else RuntimeError
        raise error("%s did not start (%s); see %s" % (self.name, proc.returncode, self.log))

    def store_refused(self):
        """Whether the last start ended on the store being out (the library's UNAVAILABLE)."""
        with open(self.log, errors="replace") as f:
            last = f.read().rsplit("==== storm: start", 1)[-1]
        return "UNAVAILABLE" in last

    def read_answers(self, proc, pending):
        for line in proc.stdout:
            parts = line.rstrip("\n").split("\t", 4)
            if len(parts) != 5:
                continue
            with self.lock:
                entry = pending.pop(parts[0], None)
            if entry is None:
                continue
            status, ptype = int(parts[1]), (None if parts[2] == "-" else parts[2])
            entry["result"] = (status, ptype, parts[3] == "1", parts[4])
            if ptype in ("upstream-unreachable", "upstream-timeout") and self.on_failure:
                self.on_failure(self, entry, status)
            entry["done"].set()
        # The process is gone (killed, or its input ended): its requests get no answer.
        with self.lock:
            lost = list(pending.values())
            pending.clear()
        for entry in lost:
            entry["done"].set()

    def call(self, op, key, mode, xrid, body, timeout):
        """(status, type, replayed, body), or None when no answer came (killed, or too slow)."""
        done = threading.Event()
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                return None
            self.next_id += 1
            rid = str(self.next_id)
            entry = {"done": done, "result": None, "xrid": xrid, "sent": time.monotonic()}
            self.pending[rid] = entry
            try:
                self.proc.stdin.write("\t".join([rid, op, key, mode, xrid, body]) + "\n")
                self.proc.stdin.flush()
            except OSError:
                self.pending.pop(rid, None)
                return None
        done.wait(timeout)
        return entry["result"]

    def signal(self, sig):
        with self.lock:  # not while start() replaces the process
            super().signal(sig)

    def finish(self, timeout=30):
        """Ends its input; returns its exit status once the requests under way are answered."""
        if not self.alive():
            return None
        self.signal(signal.SIGCONT)
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return "killed"
