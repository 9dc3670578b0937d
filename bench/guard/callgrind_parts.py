#!/usr/bin/env python3
"""Instructions per operation, by part, of one guard_sqlite_bench benchmark under callgrind.

Runs the benchmark under valgrind --tool=callgrind, collecting only inside the calls that make up
one operation (the guard's, or the hand-written SQL's), and prints the total instructions per
operation and each part's: the inclusive cost of every call to the part's functions, divided by
the number of operations (the calls to the claim). Load-independent: instructions, not time.

    bench/guard/callgrind_parts.py build/release/bench/guard/guard_sqlite_bench \\
        'BM_Guard_Single/full:0'
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

# (part, function-name pattern) in the order of an operation. The first part's calls count the
# operations. Names are matched against callgrind's demangled names.
GUARD_PARTS = [
    ("claim", r"idem::sqlite::SqliteTransaction::Claim\("),
    ("Begin (pool lease + BEGIN IMMEDIATE)", r"::SqliteStore::Begin\(\)"),
    ("savepoint statements", r"idem::sqlite::SqliteTransaction::(Savepoint|ReleaseSavepoint|RollbackToSavepoint)\("),
    ("effect (Execute)", r"idem::sqlite::SqliteTransaction::Execute\("),
    ("outcome (Finish)", r"idem::sqlite::SqliteTransaction::Finish\("),
    ("COMMIT", r"idem::sqlite::SqliteTransaction::Commit\(\)"),
]
BARE_PARTS = [
    ("claim", r"idem::bench::BareSqlite::Claim\("),
    ("Begin", r"idem::bench::BareSqlite::Begin\(\)"),
    ("savepoint statements", r"idem::bench::BareSqlite::(Savepoint|ReleaseSavepoint|OpSavepoint|ReleaseOpSavepoint)\(\)"),
    ("effect", r"idem::bench::BareSqlite::Effect\("),
    ("outcome", r"idem::bench::BareSqlite::RecordOutcome\("),
    ("COMMIT", r"idem::bench::BareSqlite::Commit\(\)"),
]
GUARD_TOGGLES = ["idem::Guard::Run(*", "idem::Guard::RunBatch(*"]
STORE_TX_TOGGLES = ["*GuardedOperation*", "idem::sqlite::SqliteStore::Begin*",
                    "*SqliteStore::Begin*", "idem::sqlite::SqliteTransaction::Commit*"]
BARE_TOGGLES = ["idem::bench::BareSqlite::Begin*", "idem::bench::BareSqlite::Commit*",
                "*BareOperation*"]


def parse(path):
    """Returns (total Ir, {function name: [calls, inclusive Ir of those calls]})."""
    names = {}
    calls = collections.defaultdict(lambda: [0, 0])
    total = 0
    pending = None  # (callee, count): the next cost line is that call's inclusive cost

    def name_of(spec):
        m = re.match(r"\((\d+)\)(?: (.*))?$", spec)
        if not m:
            return spec
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), m.group(1))

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("cfn=") or line.startswith("cfi=") or line.startswith("cfl="):
                if line.startswith("cfn="):
                    callee = name_of(line[4:])
                continue
            if line.startswith("fn="):
                name_of(line[3:])
                continue
            if line.startswith("calls="):
                pending = (callee, int(line[6:].split()[0]))
                continue
            if line.startswith("totals:") or line.startswith("summary:"):
                total = max(total, int(line.split()[1]))
                continue
            if line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending is not None:
                    calls[pending[0]][0] += pending[1]
                    calls[pending[0]][1] += cost
                    pending = None
    return total, calls


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, bench = sys.argv[1], sys.argv[2]
    bare = bench.startswith("BM_BareSql")
    toggles = BARE_TOGGLES if bare else (STORE_TX_TOGGLES if "StoreTx" in bench else GUARD_TOGGLES)
    parts = BARE_PARTS if bare else GUARD_PARTS
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        cmd += [f"--toggle-collect={t}" for t in toggles]
        cmd += [binary, f"--benchmark_filter=^{bench}(/real_time)?$", "--benchmark_min_time=4"]
        env = dict(os.environ)
        env.setdefault("IDEM_BENCH_DIR", tmp)
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        total, calls = parse(out)
    sums = collections.OrderedDict()
    for part, pattern in parts:
        rx = re.compile(pattern)
        n = ir = 0
        for name, (c, cost) in calls.items():
            if rx.search(name):
                n += c
                ir += cost
        sums[part] = (n, ir)
    ops = sums[parts[0][0]][0]
    if ops == 0:
        sys.exit("no operation was counted: is the binary built with symbols?")
    print(f"{bench}: {ops} operations, {total / ops / 1000:.1f}k instructions per operation")
    for part, (n, ir) in sums.items():
        print(f"  {part:40s} {ir / ops / 1000:7.1f}k  ({n} calls)")


if __name__ == "__main__":
    main()
