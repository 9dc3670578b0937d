#!/usr/bin/env bash
# idem's SQL functions (docs/sql.md) against the same statements written by hand, with pgbench on
# a private server (scripts/pg-fixture.sh: loopback, fsync and synchronous_commit on). Every
# transaction is a first arrival of a new key, one row of business data and its recorded answer:
#   sql    BEGIN; SELECT idem.begin(key, fp); INSERT the business row; SELECT idem.finish(key,
#          201, headers, body); COMMIT
#   hand   BEGIN; INSERT INTO idem_keys … ON CONFLICT DO NOTHING (the same columns, a fence from
#          idem_fence_seq); INSERT the business row; UPDATE idem_keys SET state = 2, … ; COMMIT
# Both write the same idem_keys records. pgbench -M prepared -c CLIENTS -j 2, SECONDS each run;
# the two take turns (sql first in odd rounds, hand first in even ones) ROUNDS times, and the
# medians are printed with each round's figures beside them: transactions per second, and the
# server's CPU per transaction (the steadier figure on a machine others load too).
#
#   bench/postgres/sql-functions.sh [SECONDS] [ROUNDS] [CLIENTS]     defaults: 10 3 16
#
# The schema comes from src/store/postgres/schema/*.sql through psql (no build needed).
set -euo pipefail
secs=${1:-10}
rounds=${2:-3}
clients=${3:-16}
root=$(cd "$(dirname "$0")/../.." && pwd)

state=$(mktemp -d)
cleanup() { "$root/scripts/pg-fixture.sh" stop "$state" >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT
"$root/scripts/pg-fixture.sh" start "$state" >&2
uri=$(cat "$state/uri")
cat "$root"/src/store/postgres/schema/*.sql | psql "$uri" -q -v ON_ERROR_STOP=1 >/dev/null
psql "$uri" -q -v ON_ERROR_STOP=1 -c \
  "CREATE TABLE bench_charges (key text NOT NULL, amount bigint NOT NULL)" >/dev/null

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

run() {  # run NAME: one pgbench run; prints its tps and the server's CPU µs per transaction
  local before after out
  before=$(server_ticks)
  out=$(pgbench -n -M prepared -c "$clients" -j 2 -T "$secs" -f "$state/$1.sql" "$uri" 2>/dev/null)
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

declare -a sql_tps hand_tps sql_cpu hand_cpu
for round in $(seq "$rounds"); do
  order="sql hand"
  (( round % 2 == 0 )) && order="hand sql"
  for side in $order; do
    read -r tps cpu < <(run "$side")
    echo "round $round: $side $tps tps, server $cpu µs/tx ($(date -u +%H:%M:%S) UTC)" >&2
    if [[ $side == sql ]]; then sql_tps+=("$tps") sql_cpu+=("$cpu"); else hand_tps+=("$tps") hand_cpu+=("$cpu"); fi
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms=$(median "${sql_tps[@]}") mh=$(median "${hand_tps[@]}")
cs=$(median "${sql_cpu[@]}") ch=$(median "${hand_cpu[@]}")
echo "| variant | median tx/s (each round) | median server CPU µs/tx (each round) |"
echo "|---|---|---|"
echo "| idem.begin + insert + idem.finish | $ms (${sql_tps[*]}) | $cs (${sql_cpu[*]}) |"
echo "| the same statements by hand | $mh (${hand_tps[*]}) | $ch (${hand_cpu[*]}) |"
awk -v s="$ms" -v h="$mh" -v cs="$cs" -v ch="$ch" \
  'BEGIN { printf "| SQL functions / by hand | %.2fx | %.2fx the CPU |\n", s / h, cs / ch }'
