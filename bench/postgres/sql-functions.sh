#!/usr/bin/env bash
# idem's SQL functions (docs/sql.md) against the same statements written by hand, with pgbench on
# a private server (scripts/pg-fixture.sh: loopback, fsync and synchronous_commit on). Every
# transaction is a first arrival of a new key, one row of business data and its recorded answer:
#   sql    BEGIN; SELECT idem.begin(key, fp); INSERT the business row; SELECT idem.finish(key,
#          201, headers, body); COMMIT
#   hand   BEGIN; INSERT INTO idem_keys … ON CONFLICT DO NOTHING (the same columns, a fence from
#          idem_fence_seq); INSERT the business row; UPDATE idem_keys SET state = 2, … ; COMMIT
#   guard  (with RELEASE_BUILD) libidem's guard on PostgreSQL, idem::Guard::Run with the same
#          one-row business INSERT (bench_effects), CLIENTS threads each on its own connection:
#          BM_Guard of RELEASE_BUILD/bench/postgres/pg_guard_bench, in a database of its own on
#          the same server (its store migrates that one; it registers 1, 8 and 32 threads only)
# Both write the same idem_keys records. pgbench -M prepared -c CLIENTS -j 2, SECONDS each run;
# the sides take turns (in a rotating order) ROUNDS times, and the medians are printed with each
# round's figures beside them: transactions per second, and the server's CPU per transaction
# (the steadier figure on a machine others load too).
#
#   bench/postgres/sql-functions.sh [SECONDS] [ROUNDS] [CLIENTS] [RELEASE_BUILD]
#                                                        defaults: 10 3 16, no guard
#
# The schema comes from src/store/postgres/schema/*.sql through psql (no build needed but for
# the guard).
set -euo pipefail
secs=${1:-10}
rounds=${2:-3}
clients=${3:-16}
build=${4:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
sides="sql hand"
if [[ -n $build ]]; then
  guard_bench=$build/bench/postgres/pg_guard_bench
  [[ -x $guard_bench ]] || { echo "build $guard_bench first (cmake --build $build --target pg_guard_bench)" >&2; exit 1; }
  if [[ -n $("$guard_bench" --benchmark_list_tests \
             --benchmark_filter="^BM_Guard/real_time/threads:$clients\$" 2>/dev/null) ]]; then
    sides="sql hand guard"
  else
    echo "pg_guard_bench has no BM_Guard at $clients threads: the guard is left out" >&2
    build=
  fi
fi

state=$(mktemp -d)
cleanup() { "$root/scripts/pg-fixture.sh" stop "$state" >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT
"$root/scripts/pg-fixture.sh" start "$state" >&2
uri=$(cat "$state/uri")
cat "$root"/src/store/postgres/schema/*.sql | psql "$uri" -q -v ON_ERROR_STOP=1 >/dev/null
psql "$uri" -q -v ON_ERROR_STOP=1 -c \
  "CREATE TABLE bench_charges (key text NOT NULL, amount bigint NOT NULL)" >/dev/null
if [[ -n $build ]]; then
  psql "$uri" -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE guard" >/dev/null
  guard_uri=${uri%/*}/guard
  # Opening the store migrates the database; the bench creates bench_effects.
  IDEM_BENCH_PG_URI=$guard_uri "$guard_bench" --benchmark_filter='BM_Guard/real_time/threads:1$' \
    --benchmark_min_time=0.01 >"$state/guard-open.log" 2>&1 ||
    { cat "$state/guard-open.log" >&2; exit 1; }
fi

cat >"$state/sql.sql" <<'SQL'
\set k random(1, 9000000000000000000)
BEGIN;
SELECT decision FROM idem.begin('b-' || :client_id || '-' || :k, 'fp');
INSERT INTO bench_charges (key, amount) VALUES ('b-' || :client_id || '-' || :k, 4200);
SELECT idem.finish('b-' || :client_id || '-' || :k, 201, '{"Content-Type": "application/json"}', '\x7b226964223a317d'::bytea);
COMMIT;
SQL
cat >"$state/hand.sql" <<'SQL'
\set k random(1, 9000000000000000000)
BEGIN;
INSERT INTO idem_keys AS k (tenant, key, fingerprint, state, fence, owner, lease_until_ms, created_ms, updated_ms, expires_ms) SELECT '', 'b-' || :client_id || '-' || :k, 'fp', 1, nextval('idem_fence_seq'), 'hand', t + 30000, t, t, t + 86400000 FROM (SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t) AS now ON CONFLICT (tenant, key) DO NOTHING RETURNING k.fence;
INSERT INTO bench_charges (key, amount) VALUES ('b-' || :client_id || '-' || :k, 4200);
UPDATE idem_keys SET state = 2, status = 201, headers = '\x0000000c436f6e74656e742d54797065000000106170706c69636174696f6e2f6a736f6e'::bytea, body = '\x7b226964223a317d'::bytea, updated_ms = floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint, expires_ms = floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 86400000 WHERE tenant = '' AND key = 'b-' || :client_id || '-' || :k AND state = 1;
COMMIT;
SQL

# The server's CPU so far, in clock ticks: the postmaster's own and its reaped children's (the
# backends of finished pgbench runs) utime + stime.
# shellcheck disable=SC1091
source "$state/env"
postmaster=$(head -1 "$IDEM_PG_DATA/postmaster.pid")
server_ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat"; }
ticks_per_second=$(getconf CLK_TCK)

guard_rows() { psql "$guard_uri" -Atc "SELECT count(*) FROM idem_keys"; }

run() {  # run NAME: one run; prints its tps and the server's CPU µs per transaction
  local before after out rows
  before=$(server_ticks)
  if [[ $1 == guard ]]; then
    # Google Benchmark calibrates with shorter runs first: the transactions are counted as rows.
    rows=$(guard_rows)
    out=$(IDEM_BENCH_PG_URI=$guard_uri "$guard_bench" \
      --benchmark_filter="^BM_Guard/real_time/threads:$clients\$" --benchmark_min_time="$secs" \
      --benchmark_format=csv 2>/dev/null |
      awk -F, -v want="\"BM_Guard/real_time/threads:$clients\"" '$1 == want { printf "tps = %s\n", $7 }')
    [[ -n $out ]] || { echo "pg_guard_bench failed at $clients threads" >&2; exit 1; }
    out+=$'\n'"number of transactions actually processed: $(( $(guard_rows) - rows ))"
  else
    out=$(pgbench -n -M prepared -c "$clients" -j 2 -T "$secs" -f "$state/$1.sql" "$uri" 2>/dev/null)
  fi
  # The run's backends count once the postmaster has reaped them: wait until none is left.
  for _ in $(seq 100); do
    [[ $(psql "$uri" -Atc "SELECT count(*) FROM pg_stat_activity WHERE backend_type =
      'client backend' AND pid <> pg_backend_pid()") == 0 ]] && break
    sleep 0.05
  done
  sleep 0.2  # the postmaster reaps an exited backend within milliseconds: a margin for that
  after=$(server_ticks)
  awk -v b="$before" -v a="$after" -v hz="$ticks_per_second" '
    /^number of transactions actually processed:/ { n = $NF }
    /^tps = / { tps = $3 }
    END { printf "%.0f %.0f\n", tps, (a - b) / hz * 1e6 / n }' <<<"$out"
}

declare -a sql_tps hand_tps guard_tps sql_cpu hand_cpu guard_cpu
read -r -a order <<<"$sides"
for round in $(seq "$rounds"); do
  for side in "${order[@]}"; do
    read -r tps cpu < <(run "$side")
    echo "round $round: $side $tps tps, server $cpu µs/tx ($(date -u +%H:%M:%S) UTC," \
      "load average $(cut -d' ' -f1 /proc/loadavg))" >&2
    declare -n tps_of=${side}_tps cpu_of=${side}_cpu
    tps_of+=("$tps") cpu_of+=("$cpu")
    unset -n tps_of cpu_of
  done
  order=("${order[@]:1}" "${order[0]}")  # the next round starts with the next side
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms=$(median "${sql_tps[@]}") mh=$(median "${hand_tps[@]}")
cs=$(median "${sql_cpu[@]}") ch=$(median "${hand_cpu[@]}")
echo "| variant | median tx/s (each round) | median server CPU µs/tx (each round) |"
echo "|---|---|---|"
echo "| idem.begin + insert + idem.finish | $ms (${sql_tps[*]}) | $cs (${sql_cpu[*]}) |"
echo "| the same statements by hand | $mh (${hand_tps[*]}) | $ch (${hand_cpu[*]}) |"
if [[ -n $build ]]; then
  mg=$(median "${guard_tps[@]}") cg=$(median "${guard_cpu[@]}")
  echo "| libidem's guard (idem::Guard::Run) | $mg (${guard_tps[*]}) | $cg (${guard_cpu[*]}) |"
fi
awk -v s="$ms" -v h="$mh" -v cs="$cs" -v ch="$ch" \
  'BEGIN { printf "| SQL functions / by hand | %.2fx | %.2fx the CPU |\n", s / h, cs / ch }'
if [[ -n $build ]]; then
  awk -v s="$ms" -v g="$mg" -v cs="$cs" -v cg="$cg" 'BEGIN { if (g > 0 && cg > 0)
    printf "| SQL functions / guard | %.2fx | %.2fx the CPU |\n", s / g, cs / cg }'
fi
