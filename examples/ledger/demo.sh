#!/usr/bin/env bash
# The main job of idem on the embedded store (SQLite): idem-ledger applies a generated file of
# keyed transfers to a fresh ledger, then applies the very same file again, as a queue or a
# retrying client would redeliver it. The second run must apply nothing and leave every balance
# as it was. Exits 0 when it did, 1 when it did not.
#
#   examples/ledger/demo.sh BUILD_DIR      e.g. examples/ledger/demo.sh build/release
set -euo pipefail

build_dir=${1:?usage: examples/ledger/demo.sh BUILD_DIR (e.g. build/release)}
ledger="$build_dir/examples/ledger/idem-ledger"
count=1000
if [[ ! -x $ledger ]]; then
  echo "demo: $ledger not found; build it first: cmake --build $build_dir --target idem-ledger" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
store="sqlite:$work/ledger.db"
transfers="$work/transfers.jsonl"

"$ledger" generate --count "$count" --seed 1 >"$transfers"
echo "== $count keyed transfers in $transfers; the first three:"
head -n 3 "$transfers"

echo
echo "== First delivery: $ledger apply --store $store transfers.jsonl"
first=$("$ledger" apply --store "$store" "$transfers")
echo "$first"
balances_before=$("$ledger" balances --store "$store")
echo "balances: $balances_before"

echo
echo "== Second delivery of the same file (a redelivery)"
second=$("$ledger" apply --store "$store" "$transfers")
echo "$second"
balances_after=$("$ledger" balances --store "$store")
echo "balances: $balances_after"

echo
ok=1
if [[ $first != "applied $count, replayed 0, rejected 0" ]]; then
  echo "FAILED: the first delivery should have applied all $count transfers." >&2
  ok=0
fi
if [[ $second != "applied 0, replayed $count, rejected 0" ]]; then
  echo "FAILED: the second delivery should have applied nothing and replayed all $count." >&2
  ok=0
fi
if [[ $balances_before != "$balances_after" ]]; then
  echo "FAILED: the balances changed on the second delivery." >&2
  ok=0
fi
if ((ok)); then
  echo "The first delivery applied all $count transfers. The second delivery of the same file"
  echo "applied none of them: each key's stored outcome was replayed instead, and every balance"
  echo "is exactly what it was. Each transfer moved money exactly once."
  exit 0
fi
exit 1
