#!/usr/bin/env bash
# Prints, after a ctest run that failed, the end of each failed test's own output (from ctest's
# LastTest.log), so that the last lines of a CI log say why a test failed, not only which one.
#   scripts/print-failed-tests.sh BUILD_DIR [LINES]
set -uo pipefail
build_dir=${1:?usage: scripts/print-failed-tests.sh BUILD_DIR [LINES]}
lines=${2:-60}
temporary="$build_dir/Testing/Temporary"
failed="$temporary/LastTestsFailed.log"
log="$temporary/LastTest.log"
if [[ ! -s $failed || ! -f $log ]]; then
  echo "print-failed-tests: no failed tests recorded in $temporary" >&2
  exit 0
fi
while IFS= read -r entry; do
  name=${entry#*:}
  echo "---- the end of ${name}'s output (last ${lines} lines) ----"
  # A test's section runs from its "N/M Test: NAME" line to the next "<end of output>".
  awk -v name="$name" '
    $0 ~ /^[0-9]+\/[0-9]+ Test: / && substr($0, index($0, "Test: ") + 6) == name { inside = 1; next }
    inside && $0 == "<end of output>" { inside = 0 }
    inside { print }
  ' "$log" | tail -n "$lines"
done <"$failed"
