#!/usr/bin/env bash
# What the guard sends and costs per operation on PostgreSQL, against the same transaction by hand
# (bench/postgres/pg_guard_bench.cc), in load-independent counts: statements, plans and execution
# time per operation (pg_stat_statements), the protocol messages per operation (parse, bind,
# execute, from the server log with log_min_duration_statement = 0), the client's send/receive
# system calls per operation (strace: one send per round trip), and the CPU of the server's
# processes and of the client per operation.
#
#   bench/postgres/pg-guard-counts.sh BUILD_DIR|BENCH_BINARY [OPERATIONS] [CLIENTS]
#
# OPERATIONS (default 2000) per client thread, CLIENTS (default 1). On a private server
# (scripts/pg-fixture.sh: loopback, fsync and synchronous_commit on) with pg_stat_statements.
# Server CPU: utime+stime of every server process, the exited backends' through the postmaster's
# cutime+cstime, taken before and after the run and divided by the operations (connection start-up
# included: a few connections for thousands of operations). Client CPU: the benchmark's own
# cpu_time per operation (the benchmark threads only).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [OPERATIONS] [CLIENTS]}
ops=${2:-2000}
clients=${3:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=$build/bench/postgres/pg_guard_bench
[[ -f "$build" && -x "$build" ]] && bench=$build  # a saved binary (an older build, say)
[[ -x "$bench" ]] || { echo "build $bench first (cmake --build $build --target pg_guard_bench)" >&2; exit 1; }

state=$(mktemp -d)
cleanup() { "$root/scripts/pg-fixture.sh" stop "$state" >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT
"$root/scripts/pg-fixture.sh" start "$state" >&2
# shellcheck disable=SC1091
source "$state/env"
export IDEM_BENCH_PG_URI=$(cat "$state/uri")
psql() { "$IDEM_PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$IDEM_PG_PORT" -U postgres postgres "$@"; }
# No autovacuum and no timed checkpoint during the runs: the server's CPU is then the statements'.
psql -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" \
     -c "ALTER SYSTEM SET autovacuum = off" -c "ALTER SYSTEM SET checkpoint_timeout = '1h'" \
     -c "ALTER SYSTEM SET max_wal_size = '8GB'"
"$root/scripts/pg-fixture.sh" restart "$state" >&2
psql -c "ALTER SYSTEM SET pg_stat_statements.track_planning = on" \
     -c "ALTER SYSTEM SET pg_stat_statements.track_utility = on" -c "SELECT pg_reload_conf()" \
     -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
# Opening the store migrates the schema; the bench creates bench_effects.
IDEM_BENCH_ITERATIONS=10 "$bench" --benchmark_filter='^BM_Guard/.*threads:1$' >/dev/null

# Server CPU in clock ticks: every process of the server, and the postmaster's reaped children.
server_ticks() {
  local pm total=0 pid
  pm=$(head -1 "$IDEM_PG_DATA/postmaster.pid")
  total=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$pm/stat")
  for pid in $(pgrep -P "$pm"); do
    total=$(( total + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || echo 0) ))
  done
  echo "$total"
}
hz=$(getconf CLK_TCK)
n=$(( ops * clients ))
filter() { echo "^$1/iterations:$ops/real_time/threads:$clients\$"; }

echo "## $clients client(s), $ops operations each ($(uptime | sed 's/.*load/load/'))"
for name in BM_HandWritten BM_HandWrittenWithSavepoint BM_Guard; do
  psql -c "SELECT pg_stat_statements_reset()" >/dev/null
  before=$(server_ticks)
  cpu=$(IDEM_BENCH_ITERATIONS=$ops "$bench" --benchmark_filter="$(filter $name)" \
          --benchmark_format=csv 2>/dev/null | awk -F, 'NR > 1 && $1 ~ /BM_/ { print $4 / 1000, $7 }')
  after=$(server_ticks)
  echo
  echo "### $name: client CPU $(cut -d' ' -f1 <<<"$cpu") µs/op (bench cpu_time), $(cut -d' ' -f2 <<<"$cpu") op/s," \
       "server CPU $(awk -v t=$(( after - before )) -v hz="$hz" -v n="$n" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }') µs/op"
  echo
  echo "| statement | calls/op | plans/op | exec µs/op | plan µs/op |"
  echo "|---|---:|---:|---:|---:|"
  psql -F '|' -c "SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90), round(calls::numeric / $n, 2),
      round(plans::numeric / $n, 2), round((total_exec_time * 1000 / $n)::numeric, 1),
      round((total_plan_time * 1000 / $n)::numeric, 1)
      FROM pg_stat_statements WHERE calls >= $n / 2 ORDER BY calls DESC, query" |
    sed 's/^/| /; s/$/ |/; s/|/ | /g; s/ \+| \+/ | /g'
  strace_out=$(mktemp)
  IDEM_BENCH_ITERATIONS=$ops strace -f -c -e trace=sendto,recvfrom,poll,ppoll -o "$strace_out" \
      "$bench" --benchmark_filter="$(filter $name)" >/dev/null 2>&1
  echo
  echo "client system calls per operation (strace -f -c, store opening included):" \
       "$(awk -v n="$n" '$NF ~ /^(sendto|recvfrom|poll|ppoll)$/ { printf "%s %.2f  ", $NF, $4 / n }' "$strace_out")"
  rm -f "$strace_out"
done

# The protocol messages one operation sends: every parse, bind and execute in the server log for
# 20 operations of each (log_min_duration_statement = 0 logs each message with its statement).
psql -c "ALTER SYSTEM SET log_min_duration_statement = 0" -c "SELECT pg_reload_conf()" >/dev/null
for name in BM_HandWritten BM_HandWrittenWithSavepoint BM_Guard; do
  log=$IDEM_PG_ROOT/server.log
  start=$(wc -l <"$log")
  IDEM_BENCH_ITERATIONS=20 "$bench" --benchmark_filter="^$name/iterations:20/real_time/threads:1\$" >/dev/null 2>&1
  echo
  echo "### $name: protocol messages per operation (20 operations)"
  tail -n +"$(( start + 1 ))" "$log" | grep -oE 'duration: [0-9.]+ ms  (statement|(parse|bind|execute) [^:]*): .*' |
    sed -E 's/duration: [0-9.]* ms  //; s/(parse|bind|execute|statement) [^:]*:/\1:/' |
    cut -c1-70 | sort | uniq -c | awk '$1 >= 20 { printf "    %5.1f  %s\n", $1 / 20, substr($0, index($0, $2)) }'
done
