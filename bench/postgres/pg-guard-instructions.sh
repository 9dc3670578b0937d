#!/usr/bin/env bash
# Instructions per operation of the guard's transaction on PostgreSQL against the same transaction
# by hand (bench/postgres/pg_guard_bench.cc), on both sides of the connection: the client's (the
# whole pg_guard_bench process under callgrind) and the server backend's (PostgreSQL under
# callgrind, one output file per process). Each figure is the difference between a run of N1 and a
# run of N2 operations divided by N2 - N1, so process start-up, connecting and opening the store
# cancel out. Load-independent (user-space instructions; the kernel's share, system calls and the
# WAL flush, is not counted: see pg-guard-counts.sh for the system calls).
#
#   bench/postgres/pg-guard-instructions.sh BUILD_DIR|BENCH_BINARY [N1] [N2]
#
# N1, N2 default to 100 and 400 operations. One client. The server runs with fsync and
# synchronous_commit off (what a commit waits for costs no instructions either way) and no
# autovacuum.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR|BENCH_BINARY [N1] [N2]}
n1=${2:-100}
n2=${3:-400}
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=$build/bench/postgres/pg_guard_bench
[[ -f "$build" && -x "$build" ]] && bench=$build
[[ -x "$bench" ]] || { echo "build $bench first (cmake --build $build --target pg_guard_bench)" >&2; exit 1; }

state=$(mktemp -d)
cg=$state/cg
mkdir -p "$cg"
chmod 777 "$state" "$cg"
stop_server() {
  [[ -n "${IDEM_PG_DATA:-}" && -f "$IDEM_PG_DATA/postmaster.pid" ]] &&
    runuser -u postgres -- "$IDEM_PG_BIN/pg_ctl" -D "$IDEM_PG_DATA" -w -t 120 -m fast stop \
      >/dev/null 2>&1 || true
}
cleanup() {
  stop_server
  # IDEM_KEEP_CALLGRIND=DIR keeps the callgrind files (callgrind_annotate them by function).
  [[ -n "${IDEM_KEEP_CALLGRIND:-}" ]] && cp -r "$cg/." "$IDEM_KEEP_CALLGRIND/" 2>/dev/null
  "$root/scripts/pg-fixture.sh" stop "$state" >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
"$root/scripts/pg-fixture.sh" start "$state" >&2
# shellcheck disable=SC1091
source "$state/env"
export IDEM_BENCH_PG_URI=$(cat "$state/uri")
"$root/scripts/pg-fixture.sh" pause "$state"
# The same server again, under callgrind (the fixture's own settings stay in the data directory).
runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file="$cg/server.%p" \
  --dump-instr=no "$IDEM_PG_BIN/postgres" -D "$IDEM_PG_DATA" -c fsync=off \
  -c synchronous_commit=off -c autovacuum=off >"$state/server.out" 2>&1 </dev/null &
for _ in $(seq 600); do
  "$IDEM_PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$IDEM_PG_PORT" && break
  sleep 0.2
done
# Opening the store migrates the schema; the bench creates bench_effects. A second run of each
# transaction follows, so that every measured backend starts alike (the first backends after a
# schema change rebuild the relation cache's init file, millions of instructions).
IDEM_BENCH_ITERATIONS=10 "$bench" --benchmark_filter='^BM_Guard/.*threads:1$' >/dev/null 2>&1
IDEM_BENCH_ITERATIONS=10 "$bench" --benchmark_filter='threads:1$' >/dev/null 2>&1

totals() { awk '/^(totals|summary):/ { print $2; exit }' "$1"; }

# run NAME N: prints the client's instructions and the busiest new backend's.
run() {
  local name=$1 n=$2 before new f client server=0 t
  before=$(ls "$cg" | sort)
  IDEM_BENCH_ITERATIONS=$n valgrind --tool=callgrind --callgrind-out-file="$cg/client.$name.$n" \
    "$bench" --benchmark_filter="^$name/iterations:$n/real_time/threads:1\$" >/dev/null 2>&1
  client=$(totals "$cg/client.$name.$n")
  # Each backend writes its file when it exits, once the client has disconnected.
  for _ in $(seq 600); do
    new=$(comm -13 <(echo "$before") <(ls "$cg" | sort) | grep '^server\.' || true)
    local done=1
    for f in $new; do [[ -n "$(totals "$cg/$f")" ]] || done=0; done
    [[ -n "$new" && $done -eq 1 ]] && break
    sleep 0.2
  done
  for f in $new; do
    t=$(totals "$cg/$f")
    (( t > server )) && server=$t
  done
  echo "$name $n: client $client, new backends: $(for f in $new; do echo -n "$f=$(totals "$cg/$f") "; done)" >&2
  echo "$client $server"
}

echo "| transaction | client instructions/op | server backend instructions/op | total |"
echo "|---|---:|---:|---:|"
for name in BM_HandWritten BM_HandWrittenWithSavepoint BM_Guard; do
  read -r c1 s1 < <(run "$name" "$n1")
  read -r c2 s2 < <(run "$name" "$n2")
  awk -v name="$name" -v c=$(( c2 - c1 )) -v s=$(( s2 - s1 )) -v n=$(( n2 - n1 )) 'BEGIN {
    printf "| %s | %.1fk | %.1fk | %.1fk |\n", name, c / n / 1000, s / n / 1000, (c + s) / n / 1000 }'
done
