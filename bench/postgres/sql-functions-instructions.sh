#!/usr/bin/env bash
# The server's instructions per transaction of idem's SQL functions against the same statements
# by hand: the transactions of sql-functions.sh ("sql": idem.begin + a business INSERT +
# idem.finish; "hand": INSERT ... ON CONFLICT, the INSERT, UPDATE), each from one pgbench
# connection, with the server under callgrind (one output file per backend). Each figure is the
# difference between a run of N1 and one of N2 transactions divided by N2 - N1, so connecting
# and the first calls' planning cancel out. Besides instructions it counts, per transaction,
# snapshots taken (GetSnapshotData: each costs the more the more connections are open) and
# executor starts. Load-independent; ROUNDS runs per side, taking turns, each printed.
#
#   bench/postgres/sql-functions-instructions.sh [ROUNDS] [N1] [N2]     defaults: 2 200 800
#
# The schema comes from src/store/postgres/schema/*.sql through psql (no build needed). The
# server runs with fsync and synchronous_commit off (waiting for a flush costs no instructions)
# and no autovacuum. Needs valgrind and python3.
set -euo pipefail
rounds=${1:-2}
n1=${2:-200}
n2=${3:-800}
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$(cd "$(dirname "$0")" && pwd)

state=$(mktemp -d)
cg=$state/cg
mkdir -p "$cg"
chmod 777 "$state" "$cg"
as_server() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
stop_server() {
  [[ -n "${IDEM_PG_DATA:-}" && -f "$IDEM_PG_DATA/postmaster.pid" ]] &&
    as_server "$IDEM_PG_BIN/pg_ctl" -D "$IDEM_PG_DATA" -w -t 120 -m fast stop >/dev/null 2>&1 ||
    true
}
cleanup() {
  stop_server
  "$root/scripts/pg-fixture.sh" stop "$state" >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
"$root/scripts/pg-fixture.sh" start "$state" >&2
uri=$(cat "$state/uri")
# shellcheck disable=SC1091
source "$state/env"
cat "$root"/src/store/postgres/schema/*.sql | psql "$uri" -q -v ON_ERROR_STOP=1 >/dev/null
psql "$uri" -q -v ON_ERROR_STOP=1 -c \
  "CREATE TABLE bench_charges (key text NOT NULL, amount bigint NOT NULL)" >/dev/null
"$root/scripts/pg-fixture.sh" pause "$state" >&2
as_server valgrind --tool=callgrind --callgrind-out-file="$cg/cg.%p" \
  "$IDEM_PG_BIN/postgres" -D "$IDEM_PG_DATA" -p "$IDEM_PG_PORT" -c listen_addresses=127.0.0.1 \
  -c fsync=off -c synchronous_commit=off -c autovacuum=off \
  </dev/null >"$state/server.log" 2>&1 &
for _ in $(seq 600); do
  psql "$uri" -Atc "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.2
done

# The transactions, exactly as sql-functions.sh runs them.
sed -n '/^cat >"\$state\/sql.sql"/,/^SQL$/p' "$here/sql-functions.sh" | sed '1d;$d' >"$state/sql.sql"
sed -n '/^cat >"\$state\/hand.sql"/,/^SQL$/p' "$here/sql-functions.sh" | sed '1d;$d' >"$state/hand.sql"

# backend_file N SIDE: runs N transactions on one connection; prints the callgrind file of its
# backend (the largest of the processes that ended meanwhile).
backend_file() {
  local before files
  before=$(ls "$cg")
  pgbench -n -M prepared -c 1 -t "$1" -f "$state/$2.sql" "$uri" >/dev/null 2>&1
  for _ in $(seq 600); do
    files=$(comm -13 <(echo "$before") <(ls "$cg") | while read -r f; do
      grep -q '^totals:' "$cg/$f" 2>/dev/null && echo "$cg/$f"; done)
    # The backend, and the short-lived process pgbench's connection check makes.
    [[ $(grep -c . <<<"$files") -ge 2 ]] && break
    sleep 0.1
  done
  for f in $files; do echo "$(awk '/^totals:/ { print $2 }' "$f") $f"; done | sort -n | tail -1 |
    cut -d' ' -f2
}

# per_tx FILE1 FILE2: instructions, snapshots and executor starts per transaction.
per_tx() {
  python3 - "$1" "$2" "$(( n2 - n1 ))" <<'PY'
import re, sys
def counts(path):
    names, calls, cur, total = {}, {'GetSnapshotData': 0, 'standard_ExecutorStart': 0}, None, 0
    for line in open(path, errors='replace'):
        m = re.match(r'c?fn=\((\d+)\)(?: (.*))?', line)
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2).strip()
            if line.startswith('cfn='):
                cur = names.get(m.group(1))
            continue
        if line.startswith('calls=') and cur in calls:
            calls[cur] += int(line.split('=')[1].split()[0])
        if line.startswith('totals:'):
            total = int(line.split()[1])
    return total, calls
(t1, c1), (t2, c2) = counts(sys.argv[1]), counts(sys.argv[2])
n = int(sys.argv[3])
print(f"{(t2 - t1) / n:.0f} {(c2['GetSnapshotData'] - c1['GetSnapshotData']) / n:.1f} "
      f"{(c2['standard_ExecutorStart'] - c1['standard_ExecutorStart']) / n:.1f}")
PY
}

declare -A instr
echo "| round | transaction | instructions/tx | snapshots/tx | executor starts/tx |"
echo "|---|---|---|---|---|"
for round in $(seq "$rounds"); do
  for side in sql hand; do
    a=$(backend_file "$n1" "$side")
    b=$(backend_file "$n2" "$side")
    read -r ins snaps starts < <(per_tx "$a" "$b")
    instr[$side]="${instr[$side]:-} $ins"
    echo "| $round | $side | $ins | $snaps | $starts |"
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086
ms=$(median ${instr[sql]}) mh=$(median ${instr[hand]})
awk -v s="$ms" -v h="$mh" 'BEGIN { printf "SQL functions / by hand: %.0f / %.0f instructions = %.2fx\n", s, h, s / h }'
