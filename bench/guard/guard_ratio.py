#!/usr/bin/env python3
"""By hand ÷ guard on SQLite, as issue 42 states its goal (≤ 1.15×), in one command.

Runs guard_sqlite_bench RUNS times (default 3), each with 5 interleaved repetitions of the four
pairs the issue compares (single: by hand with the effect's savepoint against Guard::Run; batch of
100: by hand with the per-call and effect savepoints against Guard::RunBatch; synchronous NORMAL
and FULL), and prints each run's ratio of medians (operations per second, real time) and the
median over the runs, with the load average beside each run. The database files go to the
current directory unless IDEM_BENCH_DIR says otherwise: run it from a directory on the disk.

    bench/guard/guard_ratio.py build/release/bench/guard/guard_sqlite_bench [RUNS]
"""
import json
import statistics
import subprocess
import sys

PAIRS = [  # (row, by hand, guard)
    ("NORMAL single", "BM_BareSql_Single/full:0/savepoints:1", "BM_Guard_Single/full:0"),
    ("FULL single", "BM_BareSql_Single/full:1/savepoints:1", "BM_Guard_Single/full:1"),
    ("NORMAL batch of 100", "BM_BareSql_Batch/full:0/savepoints:2", "BM_Guard_Batch/full:0"),
    ("FULL batch of 100", "BM_BareSql_Batch/full:1/savepoints:2", "BM_Guard_Batch/full:1"),
]


def run_once(binary):
    names = [n for _, hand, guard in PAIRS for n in (hand, guard)]
    pattern = "^(" + "|".join(names) + ")/real_time$"
    out = subprocess.run(
        [binary, f"--benchmark_filter={pattern}", "--benchmark_repetitions=5",
         "--benchmark_enable_random_interleaving=true", "--benchmark_min_time=0.5",
         "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    medians = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            medians[b["run_name"].removesuffix("/real_time")] = b["items_per_second"]
    return medians


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    runs = int(sys.argv[2]) if len(sys.argv) == 3 else 3
    ratios = {row: [] for row, _, _ in PAIRS}
    for r in range(runs):
        load = open("/proc/loadavg").read().split()[:3]
        medians = run_once(sys.argv[1])
        print(f"run {r + 1} (load average {' '.join(load)}):")
        for row, hand, guard in PAIRS:
            ratio = medians[hand] / medians[guard]
            ratios[row].append(ratio)
            print(f"  {row:22s} by hand {medians[hand]:10,.0f} ops/s  guard {medians[guard]:10,.0f}"
                  f" ops/s  by hand ÷ guard {ratio:.2f}×")
    print("median over the runs:")
    for row, values in ratios.items():
        print(f"  {row:22s} {statistics.median(values):.2f}×  "
              f"(runs: {', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
