#!/usr/bin/env bash
# Prints, after a ctest run that failed, each failed test's own output (from ctest's
# LastTest.log): first the end of each one's output, then, last of all, a short block naming
# each test with its first failed assertion, so that even the last dozen lines of a CI log say
# why a test failed, not only which.
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

# The output of test $1: from its "N/M Test: NAME" line to the next "<end of output>", without
# GoogleTest's closing summary (its tear-down line on), which only repeats the test's name.
output_of() {
  awk -v name="$1" '
    /^[0-9]+\/[0-9]+ Test: / && substr($0, index($0, "Test: ") + 6) == name {
      inside = 1
      next
    }
    inside && $0 == "<end of output>" { inside = 0 }
    inside && /^\[----------\] Global test environment tear-down/ { inside = 0 }
    inside { print }
  ' "$log"
}

mapfile -t names < <(sed 's/^[0-9]*://' "$failed")
for name in "${names[@]}"; do
  echo "---- the end of ${name}'s output (last ${lines} lines) ----"
  output_of "$name" | tail -n "$lines"
done
echo "---- why each failed: its first failed assertion or sanitizer report, else its end ----"
for name in "${names[@]}"; do
  echo "* $name"
  reason=$(output_of "$name" |
    grep -m1 -A4 -E ': Failure$|ERROR: (Address|Leak|Thread)Sanitizer|: runtime error: ')
  if [[ -z $reason ]]; then reason=$(output_of "$name" | grep -v '^\s*$' | tail -n 5); fi
  printf '%s\n' "$reason" | sed 's/^/    /'
done
