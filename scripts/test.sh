#!/usr/bin/env bash
# Installs what is missing, builds idem with AddressSanitizer and UndefinedBehaviorSanitizer and
# warnings as errors, and runs every test (PostgreSQL tests start their own private server).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
# Line tables only (-g1): sanitizer reports still name file and line, and the heaviest objects
# compile 10-35% faster than with full debug information on CI's two cores. A unity build (each
# target's files compiled eight at a time as one) spends about a third less CPU again on what the
# files share (bench/RESULTS.md, "Session 26: CI's build as a unity build"); targets whose files
# cannot be joined opt out (UNITY_BUILD OFF).
cmake --preset dev -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1 \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8
cmake --build --preset dev -j "$jobs"
# Tests at -j nproc, not more, although at -j2 the two cores were only ~73% busy (many tests wait
# on servers, lease lapses and child processes): several tests have time bounds (NATS leader
# elections within 60 s, a lease of 10 s against a gateway restart), and one ctest -j3 run (on a
# machine shared with other builds and benchmarks) failed three NATS cluster tests, two of them on
# those bounds. The longest tests carry a COST instead, so that they start first (idem_test).
# Little is left there anyway: the tests are mostly CPU under ASan. On a fresh 2-core machine
# (December 2026) -j2 took 1,181 s and -j4 1,059 s and 1,036 s with both cores 97% busy (the
# first -j4 run found a PostgreSQL opening bug, since fixed; both passed every NATS test).
# A failure prints the end of each failed test's own output last, where a CI log's tail shows it.
ctest --preset dev -j "$jobs" || {
  status=$?
  bash scripts/print-failed-tests.sh build/dev
  exit "$status"
}
