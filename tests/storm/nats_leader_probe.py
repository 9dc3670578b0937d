"""Does the JetStream cluster itself keep what it acknowledged when a server is SIGKILLed,
restarted and then handed the stream's leadership by a step-down? No idem here: a writer puts
numbered keys into a three-replica key-value stream and remembers each acknowledged one; a
fault loop kills a server, starts it again and steps the stream's leader down until the restarted
server leads; at the end every acknowledged key is read back from the leader.

Beside them a reader does what idem does with a key it finds: it reads recently acknowledged
keys from the stream's leader all the time and, when a read shows an older revision than the one
acknowledged (a stale read), writes that key expecting the revision it read, as a gateway taking
over a lapsed claim would. A stale read, or such a write accepted, is the cluster's alone.

  python3 tests/storm/nats_leader_probe.py [--cycles N] [--writers N] [--nats-server PATH]

Prints how many acknowledged keys are gone and how many reads were stale; exit status 1 when
any is. The storm's lost outcomes on nats-server 2.10.27 (FINDINGS.md, seed 20261208) followed
this sequence, from a server that was also behind when the leader went away: it led before its
catch-up was done (nats-server pull request 7040). This loop alone did not make that happen.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from nats_store import wait_for_placement
from nats_client import nats_request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(REPO, "scripts", "nats-fixture.sh")
STREAM = "KV_probe"


def fixture(*args, env=None):
    subprocess.run([FIXTURE] + list(args), check=True, stdout=subprocess.DEVNULL, env=env)


def request(uri, subject, payload=b"", timeout=2.0):
    return json.loads(nats_request(uri, subject, payload, timeout=timeout))


def leader(uri):
    try:
        return request(uri, "$JS.API.STREAM.INFO." + STREAM).get("cluster", {}).get("leader")
    except (RuntimeError, ValueError):
        return None


class Writer(threading.Thread):
    def __init__(self, uri, name="k"):
        super().__init__(daemon=True)
        self.uri = uri
        self.name = name
        self.acked = {}  # key -> (stream sequence, wall time)
        self.stop = threading.Event()

    def run(self):
        # Each key is written twice, as idem writes a claim and then its outcome: created
        # (expecting no earlier message) and updated (expecting the creation's sequence). What
        # must stay is the update.
        i = 0
        created = None
        while not self.stop.is_set():
            key = "%s%d" % (self.name, i)
            expect = "0" if created is None else str(created)
            try:
                ack = json.loads(nats_request(
                    self.uri, "$KV.probe." + key, b"%s%d" % (b"v" if created is None else b"u", i),
                    timeout=1.0, headers={"Nats-Expected-Last-Subject-Sequence": expect}))
            except (RuntimeError, ValueError):
                time.sleep(0.05)
                continue
            if "seq" in ack and "error" not in ack:
                if created is None:
                    created = ack["seq"]
                else:
                    self.acked[key] = (ack["seq"], time.time())
                    i += 1
                    created = None
            elif "error" in ack and created is not None and \
                    ack["error"].get("err_code") == 10071:
                i += 1  # the update's fate is unknown (a lost answer): next key
                created = None
            elif "error" in ack and created is None and ack["error"].get("err_code") == 10071:
                i += 1


class Reader(threading.Thread):
    """Reads back keys acknowledged in the last `recent` seconds, over and over."""

    def __init__(self, uri, writers, recent=30.0):
        super().__init__(daemon=True)
        self.uri = uri
        self.writers = writers
        self.recent = recent
        self.stale = []  # (key, acknowledged sequence, sequence read, wall time)
        self.overwritten = []  # keys whose stale-expecting write the leader accepted
        self.reads = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            now = time.time()
            recent = [(k, seq) for w in self.writers for k, (seq, at) in list(w.acked.items())
                      if now - at < self.recent]
            for key, seq in recent:
                if self.stop.is_set():
                    break
                query = json.dumps({"last_by_subj": "$KV.probe." + key}).encode()
                try:
                    reply = request(self.uri, "$JS.API.STREAM.MSG.GET." + STREAM, query,
                                    timeout=1.0)
                except (RuntimeError, ValueError):
                    continue
                message = reply.get("message")
                if message is None:
                    continue  # an error (no leader, timeout): not an answer
                self.reads += 1
                if message.get("seq", 0) >= seq:
                    continue
                self.stale.append((key, seq, message.get("seq"), time.time()))
                try:
                    ack = json.loads(nats_request(
                        self.uri, "$KV.probe." + key, b"taken", timeout=1.0,
                        headers={"Nats-Expected-Last-Subject-Sequence": str(message["seq"])}))
                except (RuntimeError, ValueError):
                    continue
                if "seq" in ack and "error" not in ack:
                    self.overwritten.append(key)
            time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--writers", type=int, default=1, help="writers at once")
    parser.add_argument("--nats-server", default=None)
    args = parser.parse_args()
    env = dict(os.environ)
    if args.nats_server:
        env["IDEM_NATS_SERVER"] = args.nats_server
        env.setdefault("IDEM_NATS_SYNC", "always")
    env.setdefault("IDEM_NATS_READY_TIMEOUT", "180")
    state = os.path.join(tempfile.mkdtemp(prefix="idem-nats-probe-"), "nats")
    fixture("start", state, "3", env=env)
    try:
        with open(os.path.join(state, "url")) as f:
            uri = "nats://" + f.read().strip().replace("nats://", "")
        wait_for_placement(uri)
        config = {"name": STREAM, "subjects": ["$KV.probe.>"], "num_replicas": 3,
                  "storage": "file", "max_msgs_per_subject": 1, "allow_direct": False,
                  "deny_delete": True, "duplicate_window": 120000000000}
        created = request(uri, "$JS.API.STREAM.CREATE." + STREAM, json.dumps(config).encode(),
                          timeout=10.0)
        if "error" in created:
            print("probe: stream not created: %s" % created)
            return 2
        writers = [Writer(uri, "w%d-k" % n) for n in range(args.writers)]
        for writer in writers:
            writer.start()
        reader = Reader(uri, writers)
        reader.start()
        names = {"idem-n%d" % i: i for i in (1, 2, 3)}
        for cycle in range(args.cycles):
            time.sleep(2.0)
            led = names.get(leader(uri))
            if led is None:
                continue
            # Every other cycle a follower instead of the leader.
            victim = led if cycle % 2 == 0 else (led % 3) + 1
            fixture("kill-node", state, str(victim), env=env)
            time.sleep(2.0)
            fixture("start-node", state, str(victim), env=env)
            for _ in range(8):  # step down until the restarted server leads
                if leader(uri) == "idem-n%d" % victim:
                    break
                try:
                    request(uri, "$JS.API.STREAM.LEADER.STEPDOWN." + STREAM)
                except (RuntimeError, ValueError):
                    pass
                time.sleep(1.0)
            print("probe: cycle %d: node %d killed, restarted, leader now %s; %d keys "
                  "acknowledged" % (cycle + 1, victim, leader(uri),
                                    sum(len(w.acked) for w in writers)),
                  flush=True)
        for writer in writers:
            writer.stop.set()
            writer.join()
        reader.stop.set()
        reader.join()
        time.sleep(2.0)
        gone = []
        acked = {k: v for w in writers for k, v in w.acked.items()}
        for key, (seq, at) in sorted(acked.items(), key=lambda kv: kv[1][0]):
            query = json.dumps({"last_by_subj": "$KV.probe." + key}).encode()
            reply = request(uri, "$JS.API.STREAM.MSG.GET." + STREAM, query, timeout=5.0)
            message = reply.get("message")
            if message is None or message.get("seq") != seq:
                gone.append((key, seq, reply.get("error") or "holds sequence %s, not the "
                             "acknowledged update" % message.get("seq")))
        print("probe: %d keys acknowledged, %d gone; %d reads during the faults, %d stale "
              "(older than the acknowledged update), %d overwritten by a write expecting the "
              "stale revision" % (len(acked), len(gone), reader.reads, len(reader.stale),
                                  len(reader.overwritten)))
        for key, seq, read, at in reader.stale[:20]:
            print("probe: STALE %s acknowledged at %d, read back as %s at %.1f" %
                  (key, seq, read, at))
        for key, seq, error in gone[:20]:
            print("probe: GONE %s (acknowledged at stream sequence %d): %s" % (key, seq, error))
        return 1 if gone or reader.stale else 0
    finally:
        fixture("stop", state, env=env)


if __name__ == "__main__":
    sys.exit(main())
