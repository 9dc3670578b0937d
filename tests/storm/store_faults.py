"""Store faults drawn on a stream of their own, so that the main nemesis's draws (nemesis.py,
plan.py) stay those of earlier seeds; each waits for the main nemesis's fault under way
(Nemesis.busy), so that faults still come one at a time.

  sqlite_full_short, sqlite_full_long  SQLite's database lives on a small tmpfs of its own, which
      a filler file fills for a drawn time (shorter and longer than half the lease), then frees:
      every write fails with SQLITE_FULL meanwhile. Expected: documented refusals (503
      store-unavailable, outcome-not-recorded) and no key answered without being recorded.
      Skipped, with a line saying why, where mounting a tmpfs is refused (not root).
  nats_stepdown  The bucket's stream leader steps down (JetStream's
      $JS.API.STREAM.LEADER.STEPDOWN.KV_<bucket>) and the other replicas elect another; the fault
      lasts until a leader answers again and acknowledges a write (a delete marker for a key
      idem never uses).
"""

import errno
import json
import os
import subprocess
import time

from cluster import SqliteStore
from nats_client import bucket_stream, bucket_takes_writes, nats_request
from plan import rng_for

TMPFS_SIZE = "256m"  # room for the 9 MiB answers the gateways keep, and their WAL frames


class DiskSqliteStore(SqliteStore):
    """SQLite's database on a tmpfs of its own, which fill() fills and free() frees."""

    def __init__(self, work):
        super().__init__(work)
        self.disk = os.path.join(work, "disk")
        os.makedirs(self.disk, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + TMPFS_SIZE, "tmpfs",
                               self.disk], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        self.mounted = done.returncode == 0
        self.refused = None if self.mounted else (done.stdout.strip() or "mount failed")
        if self.mounted:
            self.path = os.path.join(self.disk, "idem.db")
            self.uri = "sqlite:" + self.path
        self.filler = os.path.join(self.disk, "filler")

    def fill(self):
        """Takes every byte the tmpfs has left; returns how many."""
        written = 0
        chunk = b"x" * (1 << 20)
        with open(self.filler, "wb", buffering=0) as f:
            while True:
                try:
                    written += f.write(chunk)
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
                    break
            # The last pages: whatever a smaller write still finds.
            for size in (65536, 4096, 512):
                while True:
                    try:
                        written += f.write(chunk[:size])
                    except OSError as error:
                        if error.errno != errno.ENOSPC:
                            raise
                        break
        return written

    def free(self):
        os.remove(self.filler)

    def stop(self):
        super().stop()
        if self.mounted:
            subprocess.run(["umount", "-l", self.disk], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)


class StoreFaults:
    """The schedule of the faults above for one run, drawn from the seed."""

    KINDS = {"sqlite": ["sqlite_full_short", "sqlite_full_long"], "nats": ["nats_stepdown"]}

    def __init__(self, plan, history, store, nemesis):
        self.plan = plan
        self.history = history
        self.store = store
        self.nemesis = nemesis
        self.counts = {}
        self.problems = []
        self.faults = []
        kinds = self.KINDS.get(plan.store, [])
        if plan.store == "sqlite" and not getattr(store, "mounted", False):
            kinds = []
        if plan.store == "nats" and not plan.long_profile:
            # Step-downs are drawn in the long profile only: after one, a lagging replica that
            # became the stream's leader stalled every write for ~5 s (seed 110339, FINDINGS.md).
            # The fault now lasts until a write is acknowledged, so the checker weighs the stall;
            # the short profile, CI's, keeps the draws it has had since 986013e.
            kinds = []
        r = rng_for(plan.seed, plan.store, "store-faults")
        t = r.uniform(3.0, 8.0)
        while kinds and t < plan.seconds - 3:
            kind = r.choice(kinds)
            duration = {"sqlite_full_short": r.uniform(0.2, 0.4) * plan.lease,
                        "sqlite_full_long": r.uniform(0.8, 1.4) * plan.lease,
                        "nats_stepdown": 0.0}[kind]
            self.faults.append({"at": round(t, 3), "kind": kind, "duration": round(duration, 3)})
            t += duration + r.uniform(5.0, 12.0)

    def run(self, stop_event):
        for fault in self.faults:
            while not stop_event.is_set() and self.history.now() < fault["at"]:
                time.sleep(0.05)
            if stop_event.is_set():
                return
            with self.nemesis.busy:
                start = self.history.record("fault_start", kind=fault["kind"], gw="-")
                try:
                    detail = self.inject(fault)
                except Exception as error:  # the fault could not be made: a violation
                    detail = "failed: %s" % error
                    self.problems.append("fault %s at %.1fs could not be injected: %s" %
                                         (fault["kind"], start, error))
                self.history.record("fault", kind=fault["kind"], gw="-", start=start,
                                    end=self.history.now(), detail=detail)
            self.counts[fault["kind"]] = self.counts.get(fault["kind"], 0) + 1

    def inject(self, fault):
        if fault["kind"].startswith("sqlite_full"):
            taken = self.store.fill()
            try:
                time.sleep(fault["duration"])
            finally:
                self.store.free()
            return "disk full (%d MiB filled) for %.1fs" % (taken >> 20, fault["duration"])
        stream = bucket_stream(self.store.uri)
        # A step-down that comes right after a quorum loss or a kill finds the cluster still
        # electing ("JetStream system temporarily unavailable", 503): asked again until it is
        # taken, the wait is part of the fault's window (seed 11, long profile: two step-downs
        # queued behind a quorum loss were refused at the moment it ended).
        deadline = time.monotonic() + 30
        while True:
            try:
                reply = json.loads(nats_request(self.store.uri,
                                                "$JS.API.STREAM.LEADER.STEPDOWN." + stream))
            except RuntimeError as error:
                reply = {"error": {"code": 503, "description": str(error)}}
            if reply.get("success"):
                break
            if reply.get("error", {}).get("code") != 503 or time.monotonic() > deadline:
                raise RuntimeError("step-down of %s refused: %s" % (stream, reply))
            time.sleep(0.2)
        # The fault lasts until the stream has a leader again and that leader takes writes: a
        # lagging replica elected leader stalled every write for ~5 s (seed 110339, FINDINGS.md),
        # an outage the gateways' leases felt, so the checker must weigh it (30 s at most).
        deadline = time.monotonic() + 30
        leader = None
        while time.monotonic() < deadline:
            if leader is None:
                info = json.loads(nats_request(self.store.uri, "$JS.API.STREAM.INFO." + stream))
                leader = info.get("cluster", {}).get("leader")
            elif bucket_takes_writes(self.store.uri):
                return "stream %s stepped down; %s leads it and takes writes" % (stream, leader)
            time.sleep(0.1)
        raise RuntimeError("%s took no write 30 s after its step-down (leader %s)" %
                           (stream, leader))
