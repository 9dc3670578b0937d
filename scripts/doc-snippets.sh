#!/usr/bin/env bash
# Keeps a page's code blocks equal to the code they quote. In the page, a block introduced by
#   <!-- snippet: NAME -->
#   ```cpp
# holds the lines between "// [docs:NAME]" and "// [docs:end]" in SOURCE, de-indented.
#
# usage: doc-snippets.sh check|write SOURCE PAGE
#   check  exits 1, printing the difference, when a block differs or names no section of SOURCE
#   write  rewrites every such block of PAGE from SOURCE
set -euo pipefail
mode=$1 source=$2 page=$3

# Prints section NAME of SOURCE, with the indentation its lines share removed.
section() {
  awk -v name="$1" '
    index($0, "// [docs:" name "]") { inside = 1; next }
    inside && index($0, "// [docs:end]") { exit }
    inside { print }' "$source" |
    awk '{ lines[NR] = $0
           if ($0 ~ /[^ ]/) { match($0, /^ */); if (min == "" || RLENGTH < min) min = RLENGTH } }
         END { for (i = 1; i <= NR; i++) print substr(lines[i], min + 1) }'
}

names=$(sed -n 's/^<!-- snippet: \([a-z_-]*\) -->$/\1/p' "$page")
status=0
expected=$(mktemp)
trap 'rm -f "$expected" "$expected.page"' EXIT
# The page as it should be: every snippet block replaced by its section.
{
  in_block=0 skip_fence=0 name=""
  while IFS= read -r line || [[ -n $line ]]; do
    if ((skip_fence)); then
      printf '%s\n' "$line"
      skip_fence=0 in_block=1
      section "$name"
      continue
    fi
    if ((in_block)); then
      if [[ $line == '```' ]]; then
        printf '%s\n' "$line"
        in_block=0
      fi
      continue
    fi
    printf '%s\n' "$line"
    if [[ $line =~ ^'<!-- snippet: '([a-z_-]+)' -->'$ ]]; then
      name=${BASH_REMATCH[1]} skip_fence=1
    fi
  done <"$page"
} >"$expected.page"
for name in $names; do
  if [[ -z $(section "$name") ]]; then
    echo "$page: snippet '$name' names no '// [docs:$name]' section of $source" >&2
    status=1
  fi
done
case $mode in
  check)
    if ! diff -u "$page" "$expected.page"; then
      echo "$page quotes $source out of date: run scripts/doc-snippets.sh write $source $page" >&2
      status=1
    fi
    ;;
  write) cp "$expected.page" "$page" ;;
  *) echo "usage: doc-snippets.sh check|write SOURCE PAGE" >&2; exit 2 ;;
esac
exit $status
