#!/usr/bin/env bash
# Compares two builds of idem on bench/store/serve.sh's rows: runs serve.sh on OLD, then NEW, RUNS
# times in turn (so that both meet the same drift of a shared machine), and prints one table of
# medians with each run's figures beside them. One run of each is not enough here: the same
# binary moves 10-20% between runs (bench/RESULTS.md, Session 18).
#
#   bench/store/ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [RUNS]     RUNS: 4
#
# Environment: ROWS (serve.sh's row names; "sqlite postgres nats-1" by default), and whatever
# serve.sh reads (DURATION, CONNECTIONS, THREADS, IDEM_SERVE_ARGS).
# Output, one line per row: the median req/s of old and new (each run's in brackets), new ÷ old,
# the medians of the row's req/s ÷ the same run's SQLite req/s when the sqlite row is measured,
# and the medians of idem's and the store's CPU µs per request.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $# -lt 2 ]]; then
  echo "usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR [RUNS]" >&2
  exit 2
fi
old=$1 new=$2 runs=${3:-4}
for dir in "$old" "$new"; do
  [[ -x $dir/src/cli/idem && -x $dir/examples/charges/charges ]] ||
    { echo "$dir: no src/cli/idem or examples/charges/charges (cmake --build DIR --target idem charges)" >&2; exit 1; }
done
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "RUNS must be a positive number, not '$runs'" >&2
  exit 2
fi
export ROWS=${ROWS:-sqlite postgres nats-1}

out=$(mktemp "${TMPDIR:-/tmp}/idem-ab.XXXXXX")
trap 'rm -f "$out"' EXIT
for run in $(seq "$runs"); do
  for side in old new; do
    dir=$old
    [[ $side == new ]] && dir=$new
    echo "run $run of $runs, $side ($dir), $(date -u +%H:%M:%S) UTC" >&2
    # Table rows only: "| name | req/s | p50 | p99 | requests | non-2xx | errors | idem | store |".
    bash "$root/bench/store/serve.sh" "$dir" 2>/dev/null |
      awk -v side="$side" -v run="$run" -F'|' 'NF == 11 && $3 ~ /^ *[0-9]+ *$/ {
        gsub(/ /, "", $2); print side, run, $2, $3 + 0, $9 + 0, $10 + 0 }' >>"$out"
  done
done

python3 - "$out" "$runs" <<'PY'
import statistics, sys
path, runs = sys.argv[1], int(sys.argv[2])
data = {}  # (side, row) -> list of (run, req/s, idem µs, store µs)
for line in open(path):
    side, run, row, rate, idem, store = line.split()
    data.setdefault((side, row), []).append((int(run), float(rate), float(idem), float(store)))
rows = []
for (side, row) in data:
    if row not in rows:
        rows.append(row)

def median(values):
    return statistics.median(values) if values else float("nan")

def of_sqlite(side, row):
    base = {run: rate for run, rate, _, _ in data.get((side, "sqlite"), [])}
    return [rate / base[run] for run, rate, _, _ in data.get((side, row), []) if base.get(run)]

print(f"{runs} alternations; medians, each run's req/s in brackets")
print("| row | old req/s | new req/s | new ÷ old | old × SQLite | new × SQLite "
      "| old idem µs | new idem µs | old store µs | new store µs |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for row in rows:
    cells = [row]
    rate = {}
    for side in ("old", "new"):
        entries = data.get((side, row), [])
        rate[side] = median([e[1] for e in entries])
        each = ", ".join(f"{e[1]:,.0f}" for e in sorted(entries))
        cells.append(f"{rate[side]:,.0f} ({each})")
    cells.append(f"{rate['new'] / rate['old']:.2f}" if rate["old"] else "-")
    for side in ("old", "new"):
        ratios = of_sqlite(side, row)
        cells.append(f"{median(ratios):.2f}" if ratios and row != "sqlite" else "-")
    for index in (2, 3):
        for side in ("old", "new"):
            cells.append(f"{median([e[index] for e in data.get((side, row), [])]):.0f}")
    print("| " + " | ".join(cells) + " |")
PY
