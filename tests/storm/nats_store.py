"""The storm's JetStream store: a private three-node cluster (scripts/nats-fixture.sh) on the
nats-server the run names, with the faults the nemesis puts on it and what the servers themselves
say of the stream (their logs, their own view of it)."""

import datetime
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request

from cluster import REPO, run
from nats_client import bucket_stream, nats_request


def nats_server_setup():
    """The nats-server the fixture runs (its own lookup: IDEM_NATS_SERVER or the system's) and
    whether it fsyncs every write: IDEM_NATS_SYNC, or `always` by default on 2.10 and later, which
    can. 2.9 cannot, and its SIGKILLs lose acknowledged writes (store_losses.py)."""
    try:
        found = subprocess.run([NatsStore.script, "server"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=10)
        if found.returncode != 0:
            raise OSError(found.stdout.strip())
        out = subprocess.run([found.stdout.strip(), "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"nats_server": "unknown (%s)" % e, "nats_sync": os.environ.get("IDEM_NATS_SYNC")}
    version = out.strip().rsplit(" ", 1)[-1].lstrip("v")
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
    sync = os.environ.get("IDEM_NATS_SYNC") or ("always" if numbers >= (2, 10) else None)
    return {"nats_server": version, "nats_sync": sync}


# nats-server's own words when it throws a replica's copy of a stream away (seen on 2.9.10 after
# quorum losses, before acknowledged outcomes went missing: FINDINGS.md, seed 20261204).
STREAM_RESET = re.compile(r"Resetting stream cluster state")


class NatsStore:
    script = os.path.join(REPO, "scripts", "nats-fixture.sh")

    def __init__(self, work, seed, setup):
        self.state = os.path.join(work, "nats")
        env = dict(os.environ)
        if setup["nats_sync"]:
            env["IDEM_NATS_SYNC"] = setup["nats_sync"]
        # A restarted server is ready once it is current with the meta leader; under the storm's
        # churn of consumers on a loaded machine 2.10.27 took over the fixture's default minute
        # (seed 20261206, load 7). Three minutes, then the fault is named as not injected.
        env.setdefault("IDEM_NATS_READY_TIMEOUT", "180")
        self.env = env
        run([self.script, "start", self.state, "3"], env=env)
        with open(os.path.join(self.state, "url")) as f:
            urls = f.read().strip().replace("nats://", "")
        self.uri = "nats://%s?bucket=storm%d&replicas=3" % (urls, seed % 100000)
        self.ports = [int(u.rsplit(":", 1)[1]) for u in urls.split(",")]
        self.states = {}
        try:
            wait_for_placement(self.uri)
        except RuntimeError:
            self.stop()
            raise

    def trust(self, subnet):
        pass  # the fixture's servers take any client that reaches them

    def node(self, what, index):
        run([self.script, what, self.state, str(index + 1)], env=self.env)

    def heal(self):
        run([self.script, "heal", self.state], env=self.env)

    def stream_states(self):
        """Each server's own view of the bucket's stream (/jsz: messages, first and last
        sequence), read before the servers stop: replicas that disagree after the run has healed
        mean the store diverged, whatever idem did."""
        states = {}
        with open(os.path.join(self.state, "monitor")) as f:
            monitors = [line.strip() for line in f if line.strip()]
        for node, url in enumerate(monitors, 1):
            try:
                with urllib.request.urlopen(url + "/jsz?streams=true", timeout=5) as answer:
                    doc = json.loads(answer.read())
                streams = [s for a in doc.get("account_details") or []
                           for s in a.get("stream_detail") or []]
                states["n%d" % node] = [{"name": s["name"], **{k: s["state"].get(k) for k in (
                    "messages", "first_seq", "last_seq", "num_deleted")},
                    "leader": (s.get("cluster") or {}).get("leader")} for s in streams]
            except (OSError, ValueError, KeyError) as error:
                states["n%d" % node] = "unreadable: %s" % error
        return states

    def stop(self):
        # The servers' own logs, kept with the history of a failing run (the fixture removes
        # its folder): what JetStream did with a write the checker misses.
        self.states = self.stream_states()
        try:
            with open(os.path.join(self.state, "streams.json"), "w") as f:
                json.dump(self.states, f, indent=1)
        except OSError:
            pass
        try:
            with open(os.path.join(self.state, "env")) as f:
                root = dict(line.strip().split("=", 1) for line in f if "=" in line)
            for node in range(1, int(root["IDEM_NATS_NODES"]) + 1):
                log = os.path.join(root["IDEM_NATS_ROOT"], "n%d" % node, "server.log")
                if os.path.exists(log):
                    shutil.copy(log, os.path.join(self.state, "n%d-server.log" % node))
        except (OSError, KeyError, ValueError):
            pass
        subprocess.run([self.script, "stop", self.state], stdout=subprocess.DEVNULL)

    def leader_changes(self, wall0):
        """When each server took the bucket's stream over, from its own log (the new leader logs
        "JetStream cluster new stream leader"), on the storm's clock: [(t, "nN")]."""
        stream = bucket_stream(self.uri)
        changes = []
        line_re = re.compile(r"^\[\d+\] (\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) \[INF\] "
                             r"JetStream cluster new stream leader for '\$G > %s'" %
                             re.escape(stream))
        for node in (1, 2, 3):
            path = os.path.join(self.state, "n%d-server.log" % node)
            if not os.path.exists(path):
                continue
            with open(path, errors="replace") as f:
                for line in f:
                    found = line_re.match(line)
                    if found:
                        wall = datetime.datetime.strptime(found.group(1), "%Y/%m/%d %H:%M:%S.%f")
                        changes.append((round(wall.timestamp() - wall0, 4), "n%d" % node))
        return sorted(changes)

    def stream_resets(self):
        """How many times a server logged that it threw its copy of a stream away."""
        count = 0
        for name in os.listdir(self.state):
            if name.endswith("-server.log"):
                with open(os.path.join(self.state, name), errors="replace") as f:
                    count += sum(1 for line in f if STREAM_RESET.search(line))
        return count

    def report(self):
        """What the servers said of the stream, read once they stopped: lines for the run's
        output."""
        views = "; ".join("%s %s" % (node, state if isinstance(state, str) else ", ".join(
            "%s %s messages, seq %s-%s, leader %s" % (
                s["name"], s["messages"], s["first_seq"], s["last_seq"], s["leader"])
            for s in state)) for node, state in sorted(self.states.items()))
        return ["the servers threw a replica's copy of a stream away %d times (\"Resetting "
                "stream cluster state\")" % self.stream_resets(),
                "each server's copy of the stream at the end: %s" % views]


def wait_for_placement(uri, timeout=180.0):
    """Returns once the cluster can place a stream on three servers: a throwaway R3 stream is
    created and deleted. A fresh nats-server 2.10.27 cluster answered "no suitable peers for
    placement" for over a minute after every server was up with a meta leader (seed 20261208:
    the first gateway could not create its bucket; once, beside another cluster's storm, for
    over three minutes)."""
    name = "storm-placement"
    config = json.dumps({"name": name, "subjects": ["storm.placement"], "num_replicas": 3,
                         "storage": "memory", "max_msgs": 1}).encode()
    deadline = time.monotonic() + timeout
    reply = None
    while time.monotonic() < deadline:
        try:
            reply = json.loads(nats_request(uri, "$JS.API.STREAM.CREATE." + name, config))
        except (RuntimeError, ValueError) as error:
            reply = {"error": str(error)}
        if "error" not in reply:
            nats_request(uri, "$JS.API.STREAM.DELETE." + name)
            return
        time.sleep(0.5)
    raise RuntimeError("the cluster could not place a three-replica stream in %.0f s: %s" %
                       (timeout, reply))
