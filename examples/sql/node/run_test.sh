#!/usr/bin/env bash
# The node example's test under CTest: installs the pg package from npm (the example's own
# package.json) into a scratch copy, makes a fresh schema on the fixture's server, installs idem's
# SQL there with `idem keys migrate`, and runs test_example.js. Without node, npm, or the npm
# registry it exits 77, which CTest reports as skipped (never as passed), saying why.
# Usage: run_test.sh IDEM_BINARY FIXTURE_DIR
set -euo pipefail
idem=$1
fixture=${IDEM_PG_FIXTURE_DIR:-$2}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIPPED: node and npm are needed for the node example (Debian: nodejs, npm)" >&2
  exit 77
fi
scratch=$(mktemp -d /tmp/idem-sql-node-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cp "$here/package.json" "$here/charges_service.js" "$here/test_example.js" "$scratch/"
if ! (cd "$scratch" && timeout 120 npm install --no-audit --no-fund --silent >npm.log 2>&1); then
  echo "SKIPPED: npm install of the pg package failed (no registry access?):" >&2
  tail -5 "$scratch/npm.log" >&2
  exit 77
fi
server=$(cat "$fixture/uri")
schema="sql_node_$$_$RANDOM"
psql "$server" -q -v ON_ERROR_STOP=1 -c "CREATE SCHEMA $schema"
case "$server" in *\?*) sep='&' ;; *) sep='?' ;; esac
store="$server${sep}options=-csearch_path%3D$schema"
"$idem" keys migrate --store "$store"
node "$scratch/test_example.js" --idem "$idem" --store "$store"
