#!/usr/bin/env bash
# Installs what is missing, builds idem with AddressSanitizer and UndefinedBehaviorSanitizer and
# warnings as errors, and runs every test (PostgreSQL tests start their own private server).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
cmake --preset dev
cmake --build --preset dev -j "$jobs"
ctest --preset dev -j "$jobs"
