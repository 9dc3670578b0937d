#!/usr/bin/env bash
# A psql-only install (docs/sql.md, "Installing"): sql-functions.sql on a fresh schema of the
# fixture's server creates the store's tables and the SQL functions, begin/finish work in a
# transaction, the file runs again without change, and idem opening the same schema finds it at
# its newest version (the same migrations and checksums) and sees the key. A schema idem did not
# make, or one recorded with another migration text, is refused with psql's exit status 3 and
# the reason.
# Usage: sql_install_test.sh SQL_FILE IDEM_BINARY FIXTURE_DIR
set -euo pipefail
file=$1 idem=$2 fixture=${IDEM_PG_FIXTURE_DIR:-$3}
server=$(cat "$fixture/uri")
schema="sql_install_$$_$RANDOM"
foreign="${schema}_foreign"
trap 'psql "$server" -X -q -c "DROP SCHEMA IF EXISTS $schema, $foreign CASCADE" >/dev/null 2>&1 || true' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
in_schema() {  # in_schema SCHEMA psql-arguments...: psql with that search_path, as the store's URI gives
  local s=$1
  shift
  PGOPTIONS="-csearch_path=$s" psql "$server" -X -q -At -v ON_ERROR_STOP=1 "$@"
}
psql "$server" -X -q -v ON_ERROR_STOP=1 -c "CREATE SCHEMA $schema" -c "CREATE SCHEMA $foreign"

migrations=$(grep -c '^-- idem_install: migration [0-9]*, ' "$file")
(( migrations >= 9 )) || fail "the file holds $migrations migrations, expected at least 9"

in_schema "$schema" -f "$file" >/dev/null
[[ $(in_schema "$schema" -c "SELECT count(*), max(version) FROM idem_schema_migrations") == \
   "$migrations|$migrations" ]] || fail "migrations not recorded once each"
[[ $(in_schema "$schema" -c "SELECT count(*) FROM idem_keys") == 0 ]] || fail "idem_keys missing"

# The contract in one transaction: run, the business write, finish; then a replay.
in_schema "$schema" -c "CREATE TABLE charges (key text, amount bigint)"
got=$(in_schema "$schema" <<'SQL'
BEGIN;
SELECT decision FROM idem.begin('psql-1', 'fp-1');
INSERT INTO charges VALUES ('psql-1', 4200);
SELECT idem.finish('psql-1', 201, '{"Content-Type": "application/json"}', '\x7b7d'::bytea);
COMMIT;
SQL
)
[[ $got == run* ]] || fail "begin did not run: $got"
got=$(in_schema "$schema" -c "SELECT decision, status, headers::text, body FROM idem.begin('psql-1', 'fp-1')")
[[ $got == 'replay|201|{"Content-Type": "application/json"}|\x7b7d' ]] || fail "no replay: $got"

# Again: nothing added, nothing lost.
in_schema "$schema" -f "$file" >/dev/null
[[ $(in_schema "$schema" -c "SELECT count(*) FROM idem_schema_migrations") == "$migrations" ]] ||
  fail "the second run recorded migrations again"
[[ $(in_schema "$schema" -c "SELECT count(*) FROM charges") == 1 ]] || fail "charges changed"

# idem opening the schema: the same migrations, nothing to do, the key is an ordinary record.
case "$server" in *\?*) sep='&' ;; *) sep='?' ;; esac
store="$server${sep}options=-csearch_path%3D$schema"
"$idem" keys migrate --store "$store" >/dev/null
[[ $(in_schema "$schema" -c "SELECT count(*) FROM idem_schema_migrations") == "$migrations" ]] ||
  fail "idem applied a migration the file had recorded"
show=$("$idem" keys show --store "$store" psql-1)
grep -q '^state: *completed' <<<"$show" || fail "idem keys show: $show"

# Refusals: exit status 3 (psql's for a failed script) and the reason, nothing created.
in_schema "$foreign" -c "CREATE TABLE idem_keys (key text)"
set +e
out=$(in_schema "$foreign" -f "$file" 2>&1)
status=$?
set -e
[[ $status == 3 && $out == *"it is not idem's"* ]] || fail "foreign schema: exit $status: $out"
[[ $(in_schema "$foreign" -c "SELECT to_regclass('idem_schema_migrations') IS NULL") == t ]] ||
  fail "the refused run left idem_schema_migrations behind"
in_schema "$schema" -c "UPDATE idem_schema_migrations SET checksum = 'other' WHERE version = 3"
set +e
out=$(in_schema "$schema" -f "$file" 2>&1)
status=$?
set -e
[[ $status == 3 && $out == *"migration 3 (0003_outbox.sql) is newer than or differs"* ]] ||
  fail "other checksum: exit $status: $out"
echo "psql-only install: $migrations migrations, begin/finish/replay, rerun, idem keys migrate: ok"
