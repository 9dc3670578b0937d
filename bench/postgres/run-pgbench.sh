#!/usr/bin/env bash
# The guard on PostgreSQL against the same transaction by hand and against pgbench, at 1, 8 and 32
# clients, on a private server (scripts/pg-fixture.sh: loopback, fsync and synchronous_commit on).
#
#   bench/postgres/run-pgbench.sh BUILD_DIR [SECONDS_PER_RUN] [REPETITIONS]
#
# Each figure is the median of REPETITIONS (default 3) runs; the four variants take turns in a
# rotating order, so none always runs last on the largest table or next to a checkpoint.
#
# BUILD_DIR is a release build with pg_guard_bench built. Every transaction is a first arrival of a
# new key: claim INSERT … ON CONFLICT DO NOTHING, effect INSERT, outcome UPDATE, COMMIT.
#   pgbench   that bare transaction from a custom script, pgbench -M prepared -c N -j min(N,2)
#   by hand   the same statements through libpq prepared statements, N threads (BM_HandWritten)
#   +sp       by hand with the effect inside SAVEPOINT/RELEASE, as the guard needs it to record a
#             deterministic failure without the effect (BM_HandWrittenWithSavepoint)
#   guard     idem::Guard::Run, N threads sharing one store (BM_Guard)
# Prints a markdown table of transactions per second.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [SECONDS_PER_RUN] [REPETITIONS]}
secs=${2:-10}
reps=${3:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=$build/bench/postgres/pg_guard_bench
[[ -x "$bench" ]] || { echo "build $bench first (cmake --build $build --target pg_guard_bench)" >&2; exit 1; }

state=$(mktemp -d)
cleanup() { "$root/scripts/pg-fixture.sh" stop "$state" >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT
"$root/scripts/pg-fixture.sh" start "$state" >&2
uri=$(cat "$state/uri")
# shellcheck disable=SC1091
source "$state/env"
export IDEM_BENCH_PG_URI=$uri
# Opening the store migrates the schema; the bench creates bench_effects.
"$bench" --benchmark_filter='BM_Guard/real_time/threads:1$' --benchmark_min_time=0.01 >/dev/null

cat >"$state/bare.sql" <<'EOF'
\set k random(1, 9000000000000000000)
BEGIN;
INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner, lease_until_ms, created_ms, updated_ms, expires_ms) VALUES ('pgbench', :client_id::text || '-' || :k::text, 'fp', 1, 1, 'bench', 0, 0, 0, 0) ON CONFLICT (tenant, key) DO NOTHING RETURNING fence;
INSERT INTO bench_effects (k, v) VALUES (:client_id::text || '-' || :k::text, 1);
UPDATE idem_keys SET state = 2, status = 200, body = 'ok', updated_ms = 1, expires_ms = 1 WHERE tenant = 'pgbench' AND key = :client_id::text || '-' || :k::text AND fence = 1 AND state = 1;
COMMIT;
EOF

pgbench_tps() {
  local clients=$1 jobs=$(( $1 < 2 ? 1 : 2 ))
  "$IDEM_PG_BIN/pgbench" -n -M prepared -f "$state/bare.sql" -c "$clients" -j "$jobs" -T "$secs" \
      -h 127.0.0.1 -p "$IDEM_PG_PORT" -U postgres postgres 2>/dev/null |
    awk '/^tps = / { printf "%.0f", $3 }'
}

bench_tps() {
  local name=$1 clients=$2
  "$bench" --benchmark_filter="^$name/real_time/threads:$clients\$" --benchmark_min_time="$secs" \
      --benchmark_format=csv 2>/dev/null |
    awk -F, -v want="\"$name/real_time/threads:$clients\"" '$1 == want { printf "%.0f", $7 }'
}

measure() {
  case $1 in
    pgbench) pgbench_tps "$2" ;;
    hand) bench_tps BM_HandWritten "$2" ;;
    savepoint) bench_tps BM_HandWrittenWithSavepoint "$2" ;;
    guard) bench_tps BM_Guard "$2" ;;
  esac
}

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

variants=(pgbench hand savepoint guard)
echo "| clients | pgbench -M prepared | by hand (libpq) | by hand + savepoint | guard | pgbench / guard | by hand / guard |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for clients in 1 8 32; do
  declare -A runs=()
  for ((r = 0; r < reps; r++)); do
    for ((i = 0; i < ${#variants[@]}; i++)); do
      v=${variants[$(( (i + r) % ${#variants[@]} ))]}
      runs[$v]="${runs[$v]:-} $(measure "$v" "$clients")"
    done
  done
  p=$(median <<<"${runs[pgbench]}")
  h=$(median <<<"${runs[hand]}")
  s=$(median <<<"${runs[savepoint]}")
  g=$(median <<<"${runs[guard]}")
  echo "clients $clients runs: ${runs[*]@K}" >&2
  awk -v c="$clients" -v p="$p" -v h="$h" -v s="$s" -v g="$g" 'BEGIN {
    printf "| %d | %d | %d | %d | %d | %.2fx | %.2fx |\n", c, p, h, s, g, p / g, h / g }'
  unset runs
done
