"""Spells in which a process of the storm was starved rather than faulted: the upstream reading
nothing while gateways gave up on it, and a gateway too slow to reach its own store. A loaded
machine (CI runs the storm beside other tests) stalls processes no nemesis touched; the checker
weighs these spells as it weighs the faults it injected."""

import hashlib

# What the upstream logs as it reads a request: a run, an arrival that ran nothing, a status query.
UPSTREAM_READS = ("exec", "arrival", "status_query")


def upstream_stalls(records, failures, gap=1.0):
    """The spells in which the upstream read nothing at all while a gateway forwarded a request
    and answered it 504 (begun and answered within the spell): the upstream starved (a loaded
    machine), not idle. (start, end) pairs on the run's clock."""
    reads = sorted(r["t"] for r in records if r["ev"] in UPSTREAM_READS)
    return [(a, b) for a, b in zip(reads, reads[1:]) if b - a >= gap and
            any(f["status"] == 504 and a < f.get("start", f["at"]) and f["at"] < b
                for f in failures)]


def stalled_between(stalls, since, until):
    """How long the upstream was stalled between `since` and `until`."""
    return sum(max(0.0, min(b, until) - max(a, since)) for a, b in stalls)


def key_digest(meta):
    """The key's hash as a gateway's log names it (two tenants' keys of one string alike)."""
    return hashlib.sha256(meta.get("key_string", meta["key"]).encode()).hexdigest()[:16]


def store_path_stalls(records, keys):
    """The spells ({"gw", "start", "end"}) in which a gateway took that long to replay a key that a
    client had already been replayed before the request began (the gateway's `slow_replay` log
    records): such a request waits for no holder, it needs the gateway's threads and one store
    round trip and nothing else, so in that spell the gateway could not have renewed the leases
    it held either (seed 760143: a replay took 3.7 s on a loaded machine, and a key whose
    outcome write was in flight lapsed meanwhile)."""
    digests = {key_digest(meta): name for name, meta in keys.items()}
    first_replay = {}  # key name -> when a client first got its replay
    for r in records:
        if r["ev"] == "answer" and r.get("replayed") == "true":
            first_replay[r["key"]] = min(first_replay.get(r["key"], r["t"]), r["t"])
    spells = []
    for r in records:
        if r["ev"] != "slow_replay":
            continue
        name = digests.get(r["key_sha256"])
        if name in first_replay and first_replay[name] <= r["start"]:
            spells.append({"gw": r["gw"], "start": r["start"], "end": r["at"]})
    return spells
