"""The library workers' part of a storm run (workers.py says what they are): their clients,
their nemesis, the replays after the run and the count of the in-transaction effects, all in the
one history the checker reads. storm.py drives it through LibraryWorkers."""

import random
import signal
import threading
import time

from clients import digest, upstream_fields
from plan import mode_header, next_mode
from workers import NOT_RECORDED, RETRYABLE_TYPES, WorkerKey, WorkerPlan, WorkerProcess


class WorkerClient:
    """One client of a worker key: sends it to a worker, re-sends after no answer (the worker
    killed or slow), 409 (after the holder's lease when it honours the hint), 503 and 5xx."""

    def __init__(self, run, key, index, spec, workers, history, deadline):
        self.run_plan = run
        self.key = key
        self.index = index
        self.spec = spec
        self.workers = workers
        self.history = history
        self.deadline = deadline
        self.rng = random.Random(spec["seed"])

    def xrid(self, attempt):
        if self.spec["xrid"] == "shared":
            return "rid-" + self.key.name
        if self.spec["xrid"] == "fixed":
            return "rid-%s-c%d" % (self.key.name, self.index)
        return "rid-%s-c%d-a%d-%08x" % (self.key.name, self.index, attempt,
                                         self.rng.randrange(1 << 32))

    def run(self):
        time.sleep(self.spec["start"])
        body = self.key.body(self.spec["changed_body"])
        w = self.spec["first_worker"]
        mode = self.spec["first_mode"]
        attempt = 0
        while self.history.now() < self.deadline:
            attempt += 1
            if not self.spec["sticky"] and attempt > 1:
                w = self.rng.randrange(len(self.workers))
            if self.key.route == "tx" and mode == "drop":
                mode = "ok"  # the in-transaction effect has no connection to drop
            header = mode_header(mode, self.rng, self.run_plan.upstream_timeout)
            xrid = self.xrid(attempt)
            worker = self.workers[w]
            self.history.record("send", key=self.key.name, client=self.index, attempt=attempt,
                                gw=worker.name, xrid=xrid, request=digest(body.encode()),
                                mode=header)
            result = worker.call("run", self.key.name, header, xrid, body, self.spec["timeout"])
            if result is None:
                self.history.record("answer", key=self.key.name, client=self.index,
                                    attempt=attempt, status=None, error="no answer")
                w = (w + 1) % len(self.workers)
                time.sleep(self.rng.uniform(0.1, 0.4))
                mode = next_mode(self.rng)
                continue
            status, ptype, replayed, data = result
            self.history.record("answer", key=self.key.name, client=self.index,
                                attempt=attempt, status=status, type=ptype,
                                body=digest(data.encode()), size=len(data),
                                replayed="true" if replayed else None, retry_after=None,
                                sent=digest(body.encode()), **upstream_fields(data.encode()))
            if not (ptype in RETRYABLE_TYPES or (ptype is None and status >= 500)):
                return
            wait = self.rng.uniform(0.1, 0.5)
            if ptype == "key-in-flight" and self.spec["honour_retry_after"] and \
                    data.startswith("retry in "):
                wait = min(int(data.split()[2]) / 1000.0 + 0.05, self.run_plan.lease + 1)
            time.sleep(wait)
            mode = next_mode(self.rng)
        self.history.record("gave_up", key=self.key.name, client=self.index, attempts=attempt)


class LibraryWorkers:
    """The workers of one PostgreSQL run: start, load and faults, replays, effects, stop."""

    def __init__(self, program, run, store_uri, upstream_port, work, history):
        self.run_plan = run
        self.plan = WorkerPlan(run)
        self.history = history
        self.lease = [WorkerProcess(program, "w%d" % (i + 1), "lease", store_uri, upstream_port,
                                    run, work) for i in range(self.plan.lease_workers)]
        self.tx = [WorkerProcess(program, "w%d" % (i + 1 + self.plan.lease_workers), "tx",
                                 store_uri, upstream_port, run, work)
                   for i in range(self.plan.tx_workers)]
        self.all = self.lease + self.tx
        self.final = [WorkerProcess(program, name, mode, store_uri, upstream_port, run, work)
                      for name, mode in (("wfinal-lease", "lease"), ("wfinal-tx", "tx"))]
        for w in self.all + self.final:
            w.on_failure = self.record_failure
        self.keys = []
        self.counts = {}
        self.problems = []
        self.threads = []
        self.lock = threading.Lock()
        self.next_index = 0
        self.tx_rows = 0

    def describe(self):
        return "%d LeaseGuard worker(s), %d in-transaction worker(s)" % (len(self.lease),
                                                                         len(self.tx))

    def record_failure(self, worker, entry, status):
        """The worker's own word that it gave the key up after an upstream failure (502/504),
        as a gateway's log line is: the checker allows the re-run that follows."""
        now = self.history.now()
        start = now - (time.monotonic() - entry.get("sent", time.monotonic()))
        self.history.record("upstream_failure", gw=worker.name, xrid=entry["xrid"],
                            status=status, at=round(now, 4), start=round(start, 4))

    def start(self):
        for w in self.all:
            w.start()

    def start_load(self):
        for _ in range(self.plan.threads):
            self.threads.append(threading.Thread(target=self.work, daemon=True))
        self.threads.append(threading.Thread(target=self.nemesis, daemon=True))
        for t in self.threads:
            t.start()

    def join_load(self):
        for t in self.threads:
            t.join()
        self.check_workers()

    def work(self):
        run = self.run_plan
        deadline = run.seconds + run.settle_seconds()
        while self.history.now() < run.seconds:
            with self.lock:
                index = self.next_index
                self.next_index += 1
            key = WorkerKey(run, self.plan, index)
            with self.lock:
                self.keys.append(key)
            workers = self.lease if key.route == "lease" else self.tx
            self.history.record("key", key=key.name, route=key.route, recover=key.route,
                                fence_header=key.route == "lease", key_string=key.name,
                                tenant=None, clients=len(key.clients),
                                bodies=[digest(key.body(c).encode()) for c in (False, True)])
            clients = [threading.Thread(target=WorkerClient(run, key, i, spec, workers,
                                                            self.history, deadline).run,
                                        daemon=True) for i, spec in enumerate(key.clients)]
            for c in clients:
                c.start()
            for c in clients:
                c.join()

    def check_workers(self):
        """A worker that exited without the nemesis killing it crashed: a violation; restart."""
        for w in self.all:
            if w.proc is not None and w.proc.poll() is not None:
                self.problems.append("worker %s exited by itself with status %s (see %s)" %
                                     (w.name, w.proc.returncode, w.log))
                self.history.record("gateway_exit", gw=w.name, status=w.proc.returncode)
                w.start()

    def nemesis(self):
        for fault in self.plan.faults:
            while self.history.now() < fault["at"]:
                time.sleep(0.05)
            self.check_workers()
            w = self.all[fault["worker"]]
            start = self.history.record("fault_start", kind=fault["kind"], gw=w.name)
            d = fault["duration"]
            try:
                if fault["kind"] == "wk_kill":
                    w.kill()
                    time.sleep(d)
                    w.start()
                    detail = "%s worker killed for %.1fs" % (w.mode, d)
                else:
                    w.signal(signal.SIGSTOP)
                    time.sleep(d)
                    w.signal(signal.SIGCONT)
                    detail = "%s worker stopped for %.1fs (lease %.1fs)" % (w.mode, d,
                                                                           self.run_plan.lease)
            except Exception as error:  # a restart failed: say so, go on with the run
                detail = "failed: %s" % error
                self.problems.append("fault %s of %s at %.1fs could not be injected: %s" %
                                     (fault["kind"], w.name, start, error))
            self.history.record("fault", kind=fault["kind"], gw=w.name, start=start,
                                end=self.history.now(), detail=detail)
            self.counts[fault["kind"]] = self.counts.get(fault["kind"], 0) + 1

    def stop_load_workers(self):
        for w in self.all:
            status = w.finish()
            if status not in (0, None):
                self.problems.append("worker %s: the end of its input gave exit status %s" %
                                     (w.name, status))

    def replay(self, key, worker, deadline):
        """Asks a fresh worker for the key's stored answer twice (nothing runs)."""
        changed = False
        for n in (1, 2):
            while True:
                result = worker.call("replay", key.name, "ok", "replay-%s-%d" % (key.name, n),
                                     key.body(changed), 30)
                if result is not None and result[0] == 422 and not changed:
                    changed = True
                    continue
                if self.history.now() < deadline and (result is None or result[1] in (
                        "key-in-flight", "store-unavailable")):
                    time.sleep(0.3)
                    continue
                status, ptype, replayed, data = result or (None, None, False, "no answer")
                self.history.record("replay", key=key.name, n=n, status=status, type=ptype,
                                    body=digest(data.encode()), replayed="true" if replayed
                                    else None, unrecorded=status == 503 and data == NOT_RECORDED,
                                    **upstream_fields(data.encode()))
                break

    def replay_and_count(self, deadline):
        """After the run: every key's stored answer twice, and the in-transaction effects, one
        `exec` a row of storm_tx_effects (the only executions of those keys that count)."""
        for w in self.final:
            w.start()
        lease_final, tx_final = self.final
        threads = []
        for chunk in range(4):
            part = self.keys[chunk::4]
            t = threading.Thread(target=lambda p=part: [
                self.replay(k, lease_final if k.route == "lease" else tx_final, deadline)
                for k in p])
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        result = tx_final.call("effects", "-", "-", "-", "", 60)
        if result is None or result[0] != 200:
            self.problems.append("could not read storm_tx_effects: %s" % (result,))
        else:
            for row in filter(None, result[3].split(";")):
                self.tx_rows += 1
                ex, key, worker, request = row.split(",")
                self.history.record("exec", key=key, ex=int(ex), gw=worker, route="tx",
                                    fence=None, xrid=None, mode="ok", delay_ms=0, size=0,
                                    request=request, source="storm_tx_effects")
        for w in self.final:
            w.finish()

    def summary(self):
        lease = sum(1 for k in self.keys if k.route == "lease")
        return "library workers: %d keys (%d LeaseGuard, %d in-transaction), %d rows of " \
            "storm_tx_effects" % (len(self.keys), lease, len(self.keys) - lease, self.tx_rows)

    def kill(self):
        for w in self.all + self.final:
            w.kill()
