#!/usr/bin/env bash
# The Debian packages (cmake/IdemDeb.cmake), made from the calling build as scripts/package.sh
# makes them from a release build: cpack -G DEB; each package's file list (dpkg-deb -c) against
# the expected one (deb-contents.txt, plus every public header for libidem-dev); the version and
# the dependencies dpkg-shlibdeps computed (dpkg-deb -f); then the idem package extracted
# (dpkg-deb -x) into a temporary root, where the extracted `idem --version` must print the
# project's version and `idem serve --config` on the shipped example config must start and
# answer /readyz (ports and store overridden by flags, as the example's would be taken); lintian
# with no error on either package; the idem package installed, removed and purged by dpkg in a
# scratch root (what remains checked); libidem-dev's static libraries without debug info and its
# installed size under a bound; the man pages compressed, rendered by man without a warning, the
# operators' ones written by hand; an error message naming an installed page; last,
# systemd-analyze verify on the shipped units where systemd is installed.
#
# usage: run-deb.sh CPACK BUILD_DIR SOURCE_DIR WORK_DIR VERSION LIBDIR CONFIG MALLOC
#   LIBDIR: the build's CMAKE_INSTALL_LIBDIR; CONFIG: its build type in lower case ("noconfig"
#   when it has none), as the exported targets' file is named; MALLOC: the allocator the build
#   linked the program with (tcmalloc or system; IDEM_MALLOC, system in a sanitizer build).
set -euo pipefail
cpack=$1 build=$2 source=$3 work=$4 version=$5 libdir=$6 config=$7 malloc=$8
# libidem-dev's bound, installed (KiB). An optimised build's static libraries without debug info
# are 2.7 MiB (86 MiB with it; RelWithDebInfo, as scripts/package.sh builds them); the Debug
# sanitizer build's -O0 instrumented code is 70 MiB even without it.
case $config in
  debug) dev_max_kib=98304 ;;
  *) dev_max_kib=8192 ;;
esac

rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "package test (deb): $*" >&2
  exit 1
}

# CPack installs the components from the calling build, which is built already: the packages
# are made in WORK_DIR, never in the build tree. gzip, CPack's default, compresses the large
# sanitizer build fastest.
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
arch=$(dpkg --print-architecture)
idem_deb=$work/out/idem_${version}_${arch}.deb
dev_deb=$work/out/libidem-dev_${version}_${arch}.deb
[[ -f $idem_deb && -f $dev_deb ]] || { ls -l "$work/out" >&2; fail "no idem and libidem-dev .deb"; }

# Files and symbolic links only (directories follow from them), without the leading ".".
contents() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print substr($6, 2) }' | sort; }
{
  awk '!/^#/ && NF' "$source/tests/package/deb-contents.txt" |
    sed -e "s|@LIBDIR@|$libdir|" -e "s|@CONFIG@|$config|"
  (cd "$source/include" && find idem -name '*.h' | sed 's|^|libidem-dev /usr/include/|')
  echo "libidem-dev /usr/include/idem/version.h"
} | sort -u >"$work/expected.txt"
{
  contents "$idem_deb" | sed 's|^|idem |'
  contents "$dev_deb" | sed 's|^|libidem-dev |'
} | sort -u >"$work/actual.txt"
diff -u "$work/expected.txt" "$work/actual.txt" >&2 ||
  fail "the packages' contents differ from tests/package/deb-contents.txt (- expected, + found)"

for deb in "$idem_deb" "$dev_deb"; do
  [[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "$deb: Version is not $version"
done
depends=$(dpkg-deb -f "$idem_deb" Depends)
# adduser for the postinst; libc6 and libsystemd0 found by dpkg-shlibdeps in the program.
for dep in adduser libc6 libsystemd0 libsqlite3-0; do
  grep -qw "$dep" <<<"$depends" || fail "idem's Depends lacks $dep: $depends"
done
# The allocator: tcmalloc_minimal found by dpkg-shlibdeps when the program links it, else absent.
case $malloc in
  tcmalloc) grep -qw libtcmalloc-minimal4 <<<"$depends" ||
    fail "the program links tcmalloc, but idem's Depends lacks libtcmalloc-minimal4: $depends" ;;
  system) if grep -qw libtcmalloc-minimal4 <<<"$depends"; then
    fail "the program uses the system allocator, but idem's Depends has libtcmalloc-minimal4"; fi ;;
  *) fail "MALLOC is '$malloc'; expected tcmalloc or system" ;;
esac
dpkg-deb -e "$idem_deb" "$work/control"
for script in postinst prerm postrm; do
  cmp -s "$work/control/$script" "$source/packaging/debian/$script" || fail "$script differs"
done

# libidem-dev's static libraries carry no debug info (cmake/IdemDebStrip.cmake strips it once
# staged: a RelWithDebInfo build's made the package 90 MiB installed), so the package stays small.
dev_root=$work/dev-root
dpkg-deb -x "$dev_deb" "$dev_root"
while IFS= read -r -d '' library; do
  if objdump -h "$library" | grep -q '\.debug_'; then
    fail "libidem-dev: ${library#"$dev_root"} still has debug sections"
  fi
done < <(find "$dev_root" -name '*.a' -print0)
dev_kib=$(dpkg-deb -f "$dev_deb" Installed-Size)
((dev_kib <= dev_max_kib)) ||
  fail "libidem-dev is $dev_kib KiB installed, over the bound of $dev_max_kib KiB ($config build)"
echo "package test (deb): libidem-dev is $dev_kib KiB installed"

# lintian (Debian package lintian, from scripts/install-deps.sh): no error on either package.
command -v lintian >/dev/null || fail "lintian is not installed (scripts/install-deps.sh)"
for deb in "$idem_deb" "$dev_deb"; do
  lintian --tag-display-limit 0 "$deb" >"$work/lintian.log" 2>&1 || true
  if grep -q '^E: ' "$work/lintian.log"; then
    cat "$work/lintian.log" >&2
    fail "lintian reports errors on $(basename "$deb")"
  fi
done

# Installed, removed and purged by dpkg in a scratch root of its own (dpkg --root; the maintainer
# scripts run outside it with DPKG_ROOT set, so they touch only that root, never this system's
# units or users): remove leaves the operator's /etc/idem and /var/lib/idem, purge removes them;
# nothing of the package remains but dpkg's own database.
scratch=$work/scratch-root
mkdir -p "$scratch/var/lib/dpkg/info" "$scratch/var/lib/dpkg/updates" "$scratch/var/lib/dpkg/triggers"
: >"$scratch/var/lib/dpkg/status"
in_scratch() {
  dpkg --root="$scratch" --force-script-chrootless --force-depends --force-not-root \
    --log=/dev/null "$@" >>"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg $* failed"; }
}
in_scratch --install "$idem_deb"
[[ -x $scratch/usr/bin/idem ]] || fail "dpkg --install left no $scratch/usr/bin/idem"
mkdir -p "$scratch/etc/idem" "$scratch/var/lib/idem"
echo 'listen = "127.0.0.1:8080"' >"$scratch/etc/idem/main.toml"
echo 'keys' >"$scratch/var/lib/idem/main.db"
in_scratch --remove idem
[[ ! -e $scratch/usr/bin/idem ]] || fail "dpkg --remove left /usr/bin/idem"
[[ -f $scratch/etc/idem/main.toml && -f $scratch/var/lib/idem/main.db ]] ||
  fail "dpkg --remove took the operator's /etc/idem or /var/lib/idem"
in_scratch --purge idem
left=$(cd "$scratch" && find . -path ./var/lib/dpkg -prune -o ! -type d -print)
[[ -z $left ]] || fail "dpkg --purge left files behind: $left"
[[ ! -e $scratch/etc/idem && ! -e $scratch/var/lib/idem ]] ||
  fail "dpkg --purge left /etc/idem or /var/lib/idem"

root=$work/root
dpkg-deb -x "$idem_deb" "$root"
got=$("$root/usr/bin/idem" --version)
[[ $got == "idem $version" ]] || fail "extracted idem --version printed '$got'"

# The man pages: each compressed (gzip -9n, as Debian wants them) and rendered by man without a
# warning; the ones written by hand for operators (packaging/man) are not help2man's.
command -v man >/dev/null || fail "man is not installed (Debian package man-db)"
pages=$(find "$root/usr/share/man" -type f | sort)
[[ -n $pages ]] || fail "no man pages in the idem package"
for page in $pages; do
  [[ $page == *.gz ]] || fail "${page#"$root"} is not compressed"
  gzip -t "$page" || fail "${page#"$root"} is not a valid gzip file"
  warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  [[ -z $warnings ]] || fail "man -l ${page#"$root"} warns: $warnings"
done
for page in man1/idem-serve.1 man1/idem-relay.1 man1/idem-keys.1 man1/idem-outbox.1 \
    man5/idem-serve.toml.5; do
  [[ -f $root/usr/share/man/$page.gz ]] || fail "no /usr/share/man/$page.gz"
  if zgrep -qi help2man "$root/usr/share/man/$page.gz"; then
    fail "/usr/share/man/$page.gz is help2man's, not the page written by hand"
  fi
done
[[ $(zcat "$root/usr/share/man/man1/idem-serve.1.gz" | head -n 5) == *"idem $version"* ]] ||
  fail "idem-serve(1) does not name version $version"

# An error message names an installed page, not a file of the source tree.
printf 'listen = "127.0.0.1:0"\nleese = "30s"\n' >"$work/typo.toml"
code=0
message=$("$root/usr/bin/idem" serve --config "$work/typo.toml" --check-config 2>&1) || code=$?
[[ $code == 2 ]] || fail "idem serve --check-config on an unknown setting exited $code: $message"
[[ $message == *"unknown setting 'leese'; see idem-serve.toml(5)"* ]] ||
  fail "the unknown-setting error names no installed page: $message"
[[ -f $root/usr/share/man/man5/idem-serve.toml.5.gz ]] ||
  fail "the error names idem-serve.toml(5), which the package does not install"

# The shipped example config, with the flags a test needs over it: a free admin port (which is
# also the upstream /readyz probes: only a connection is asked of it), a listener on any port, a
# store under WORK_DIR.
# shellcheck source=../../scripts/test-ports.sh
source "$source/scripts/test-ports.sh"
reserve_port
admin=$reserved_port
"$root/usr/bin/idem" serve --config "$root/usr/share/idem/examples/serve.toml" \
  --listen 127.0.0.1:0 --admin "127.0.0.1:$admin" --upstream "http://127.0.0.1:$admin" \
  --store "sqlite:$work/idem.db" >"$work/serve.log" 2>&1 &
serve=$!
ready=""
for _ in $(seq 1 600); do  # 60 s at most
  if ready=$(curl -sf "http://127.0.0.1:$admin/readyz" 2>/dev/null); then break; fi
  kill -0 "$serve" 2>/dev/null || break
  sleep 0.1
done
tcmalloc_mapped=no
if grep -q libtcmalloc_minimal "/proc/$serve/maps" 2>/dev/null; then tcmalloc_mapped=yes; fi
kill -TERM "$serve" 2>/dev/null || true
code=0
wait "$serve" || code=$?
[[ $ready == ready ]] || { cat "$work/serve.log" >&2; fail "idem serve never answered /readyz"; }
[[ $code == 0 ]] || { cat "$work/serve.log" >&2; fail "idem serve exited $code after SIGTERM"; }
[[ $tcmalloc_mapped == $([[ $malloc == tcmalloc ]] && echo yes || echo no) ]] ||
  fail "the running idem serve has tcmalloc mapped: $tcmalloc_mapped; the build's allocator: $malloc"

if command -v systemd-analyze >/dev/null; then
  # The units name /usr/bin/idem: verified against the extracted one. Man pages are not looked
  # up (man may not be installed); the package ships them, as its contents say.
  mkdir -p "$work/units"
  for unit in idem-serve@.service idem-relay@.service; do
    sed "s|/usr/bin/idem|$root/usr/bin/idem|" "$root/usr/lib/systemd/system/$unit" \
      >"$work/units/$unit"
  done
  for instance in idem-serve@main.service idem-relay@main.service; do
    out=$(cd "$work/units" && systemd-analyze verify --man=no "$instance" 2>&1) ||
      { echo "$out" >&2; fail "systemd-analyze verify $instance failed"; }
    [[ -z $out ]] || { echo "$out" >&2; fail "systemd-analyze verify $instance is not clean"; }
  done
else
  echo "package test (deb): systemd-analyze is not installed; units not verified"
fi
echo "package test (deb): passed"
