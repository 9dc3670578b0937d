#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a given time (default 60 s each), one after the
# other, starting from the seed corpora in the repository. New inputs go to a scratch corpus
# (build/fuzz/corpus/NAME), never into the repository; findings (crash-*, leak-*, timeout-*)
# land in build/fuzz/findings/NAME and make the script exit 1.
#
#   bash bench/fuzz.sh [SECONDS] [TARGET...]     TARGET: request_decision, config_file
#
# Needs clang with libFuzzer (Debian: clang, libclang-rt-14-dev; scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(request_decision config_file); fi
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "fuzz.sh: SECONDS must be a whole number of seconds, got '$seconds'" >&2
  exit 2
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j2

status=0
for t in "${targets[@]}"; do
  bin=build/fuzz/tests/fuzz/fuzz_$t
  if [[ ! -x $bin ]]; then
    echo "fuzz.sh: no target '$t' (have: request_decision, config_file)" >&2
    exit 2
  fi
  work=build/fuzz/corpus/$t
  findings=build/fuzz/findings/$t
  mkdir -p "$work" "$findings"
  echo "== fuzz_$t for ${seconds}s (corpus $work, seeds tests/fuzz/corpus/$t)"
  if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$work" "tests/fuzz/corpus/$t"; then
    echo "fuzz.sh: fuzz_$t found a problem; the input is in $findings/" >&2
    status=1
  fi
done
exit $status
