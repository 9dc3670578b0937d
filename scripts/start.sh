#!/usr/bin/env bash
# Installs what is missing, builds idem (release) and runs the main job on the embedded store
# (SQLite): the ledger example applies a generated file of keyed transfers twice; the second run is
# a redelivery and applies nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"
exec examples/ledger/demo.sh build/release
