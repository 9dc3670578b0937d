"""The nemesis: the seed's fault schedule, one fault at a time, each recorded in the history with
when it began and ended. Store faults are outages the checker weighs against the lease."""

import signal
import threading
import time

from cluster import config_toml

BROKEN_CONFIG = '[[route]]\npath_prefix = "/off"\nin_flight = "sometimes"\nthis is not toml [[\n'


class Nemesis:
    def __init__(self, plan, history, gateways, store, stop_event):
        self.plan = plan
        self.history = history
        self.gateways = gateways
        self.store = store
        self.stop_event = stop_event
        self.flipped = [False] * len(gateways)
        self.counts = {}
        self.problems = []  # what went wrong with the processes themselves (violations)
        self.unstarted = set()  # gateways whose restart failed: started again at the next check
        # Held while a fault is under way: store_faults.py's faults wait for it (one at a time).
        self.busy = threading.Lock()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.thread.start()

    def join(self):
        self.thread.join()

    def wait_until(self, t):
        while not self.stop_event.is_set() and self.history.now() < t:
            time.sleep(min(0.05, max(0.0, t - self.history.now())))
        return not self.stop_event.is_set()

    def run(self):
        for fault in self.plan.faults:
            if not self.wait_until(fault["at"]):
                break
            self.check_gateways()
            self.busy.acquire()
            start = self.history.record("fault_start", kind=fault["kind"],
                                        gw="g%d" % (fault["gw"] + 1))
            try:
                detail = self.inject(fault)
            except Exception as error:  # a fixture step failed: say so, go on with the run
                detail = "failed: %s" % error
                self.problems.append("fault %s at %.1fs could not be injected: %s" %
                                     (fault["kind"], start, error))
            self.history.record("fault", kind=fault["kind"], gw="g%d" % (fault["gw"] + 1),
                                start=start, end=self.history.now(), detail=detail)
            self.busy.release()
            counted = fault["kind"] + (" (skipped)" if str(detail).startswith("skipped") else "")
            self.counts[counted] = self.counts.get(counted, 0) + 1
        self.check_gateways()

    def check_gateways(self):
        """A gateway that exited without the nemesis killing it crashed: a violation; restart it."""
        for g in self.gateways:
            if g.name in self.unstarted:
                self.restart(g)
            elif not g.alive() and g.proc is not None:
                code = g.proc.returncode
                self.problems.append("gateway %s exited by itself with status %s (see %s)" %
                                     (g.name, code, g.log))
                self.history.record("gateway_exit", gw=g.name, status=code)
                self.restart(g)

    def restart(self, g, clock_offset=None):
        """Starts a gateway the nemesis finds down; one that cannot start (its store still
        healing after Gateway.start's wait) is named, and tried again at the next fault,
        instead of ending the nemesis's thread and with it every later fault. The problem is
        named once per outage, not again at every fault it lasts through."""
        try:
            g.start(clock_offset=clock_offset)
        except Exception as error:
            if g.name not in self.unstarted:
                self.problems.append("gateway %s could not be started again: %s" %
                                     (g.name, error))
            self.unstarted.add(g.name)
            self.history.record("gateway_down", gw=g.name, error=str(error))
            return
        self.unstarted.discard(g.name)

    def sleep(self, seconds):
        time.sleep(seconds)

    def inject(self, fault):
        kind, d = fault["kind"], fault["duration"]
        g = self.gateways[fault["gw"]]
        i = fault["gw"]
        if kind == "gw_kill":
            g.kill()
            self.sleep(d)
            self.restart(g)
            return "killed for %.1fs" % d
        if kind in ("gw_stop_short", "gw_stop_long"):
            g.signal(signal.SIGSTOP)
            self.sleep(d)
            g.signal(signal.SIGCONT)
            return "stopped for %.1fs (lease %.1fs)" % (d, self.plan.lease)
        if kind == "gw_term":
            status = g.terminate()
            self.restart(g)
            if status != 0:
                self.problems.append("gateway %s drained (SIGTERM) with exit status %s, not 0" %
                                     (g.name, status))
            return "drained, exit %s" % status
        if kind == "gw_hup_ok":
            self.flipped[i] = not self.flipped[i]
            line = g.reload(config_toml(self.plan, flip_in_flight=self.flipped[i]))
            if line is None or "reloaded" not in line or "not reloaded" in line:
                self.problems.append("gateway %s: a valid config was not reloaded: %s" %
                                     (g.name, line))
            return line
        if kind == "gw_hup_bad":
            line = g.reload(BROKEN_CONFIG)
            with open(g.config, "w") as f:
                f.write(config_toml(self.plan, flip_in_flight=self.flipped[i]))
            if line is None or "not reloaded" not in line:
                self.problems.append("gateway %s: a broken config was not refused: %s" %
                                     (g.name, line))
            return line
        if kind == "gw_clock":
            g.terminate()
            self.restart(g, clock_offset=fault["clock"])
            return "restarted with its wall clock %+.1fs off" % fault["clock"]
        if kind.startswith("sqlite_lock"):
            self.store.hold_write_lock(d)
            return "write lock held %.1fs" % d
        if kind in ("pg_pause_short", "pg_pause_long"):
            self.store.fixture("pause")
            self.sleep(d)
            self.store.fixture("resume")
            return "server stopped for %.1fs" % d
        if kind == "pg_crash":
            self.store.fixture("crash")
            self.sleep(d)
            self.store.fixture("resume")
            return "crashed (immediate stop), down %.1fs" % d
        if kind == "pg_restart":
            self.store.fixture("restart")
            return "restarted (fast)"
        if kind == "pg_terminate":
            self.store.terminate_backends()
            return "pg_terminate_backend of every client"
        if kind.startswith("net_"):
            return self.partition(fault, g)
        node = fault["node"]
        if kind == "nats_kill":
            self.store.node("kill-node", node)
            self.sleep(d)
            self.store.node("start-node", node)
            return "node %d killed for %.1fs" % (node + 1, d)
        if kind == "nats_pause":
            self.store.node("pause-node", node)
            self.sleep(d)
            self.store.node("resume-node", node)
            return "node %d paused for %.1fs" % (node + 1, d)
        if kind == "nats_quorum":
            other = (node + 1) % 3
            self.store.node("pause-node", node)
            self.store.node("pause-node", other)
            self.sleep(d)
            self.store.heal()
            return "quorum lost: nodes %d and %d paused for %.1fs" % (node + 1, other + 1, d)
        if kind == "nats_crash_two":
            other = (node + 1) % 3
            self.store.node("kill-node", node)
            self.store.node("kill-node", other)
            self.sleep(d)
            self.store.heal()
            return "nodes %d and %d killed together for %.1fs" % (node + 1, other + 1, d)
        raise ValueError("unknown fault " + kind)

    def partition(self, fault, g):
        """Cuts gateway `g` off the network (isolate) or off its store, for the fault's duration;
        its connections hang meanwhile (nothing is reset), then go on."""
        d = fault["duration"]
        if g.netns is None:
            return "skipped: the gateways have no network namespaces here"
        if fault["kind"].startswith("net_isolate"):
            g.netns.isolate()
            what = "cut off the network (link down)"
        else:
            g.netns.cut_store(self.store.ports)
            what = "cut off its store (ports %s dropped)" % ",".join(map(str, self.store.ports))
        try:
            self.sleep(d)
        finally:
            g.netns.heal()
        return "%s %s for %.1fs (lease %.1fs)" % (g.name, what, d, self.plan.lease)
