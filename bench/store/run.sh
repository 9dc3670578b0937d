#!/usr/bin/env bash
# The key-store benchmark (bench/RESULTS.md, "Key store on JetStream"): claim+complete pairs per
# second and p50/p99 per pair through bench/store/store_lease_bench, on SQLite (synchronous=FULL,
# file under BENCH_DIR), PostgreSQL (scripts/pg-fixture.sh) and a three-node JetStream cluster
# (scripts/nats-fixture.sh, R=3) with 1, 2 and 4 shards, in one run on the same machine.
#
#   bench/store/run.sh BUILD_DIR [SECONDS]      e.g. bench/store/run.sh build/release 10
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [SECONDS]}
seconds=${2:-10}
bench=$build/bench/store/store_lease_bench
root=$(cd "$(dirname "$0")/../.." && pwd)
state=$(mktemp -d "${TMPDIR:-/tmp}/idem-store-bench.XXXXXX")
bench_dir=${BENCH_DIR:-$build}
cleanup() {
  "$root/scripts/nats-fixture.sh" stop "$state/nats" >/dev/null 2>&1 || true
  "$root/scripts/pg-fixture.sh" stop "$state/pg" >/dev/null 2>&1 || true
  rm -rf "$state" "$bench_dir"/store-bench-*.db*
}
trap cleanup EXIT
"$root/scripts/nats-fixture.sh" start "$state/nats" 3 >/dev/null
"$root/scripts/pg-fixture.sh" start "$state/pg" >/dev/null
hosts=$(sed 's|nats://||g' "$state/nats/url")
pg=$(cat "$state/pg/uri")
run() { "$bench" "$@" "$seconds" "$shape" || echo "$1 $shape threads=$2: failed (above)"; }
n=0
for shape in single batch:64; do
  for threads in 1 16; do
    if [[ $shape == batch:64 && $threads == 16 ]]; then continue; fi
    n=$((n + 1))
    run "sqlite:$bench_dir/store-bench-$n.db" "$threads"
    run "$pg" "$threads"
    for shards in 1 2 4; do
      n=$((n + 1))
      run "nats://$hosts?replicas=3&shards=$shards&bucket=bench$n" "$threads"
    done
  done
done
# Many clients on the cluster, as many gateways would be.
for shards in 1 4; do
  n=$((n + 1))
  shape=single run "nats://$hosts?replicas=3&shards=$shards&bucket=bench$n" 64
done
