#!/usr/bin/env bash
# A newer nats-server for the storm's JetStream store, from Debian's forky suite (testing;
# nats-server 2.15), unpacked into a folder of its own: nothing is installed and the system's
# nats-server (Debian 12's 2.9.10, the one the NATS tests run) is untouched. The storm runs its
# JetStream cluster on it (scripts/storm.sh; scripts/install-deps.sh fetches it once), because the
# older servers lose writes they acknowledged under the storm's faults, which would be the store's
# losses, not idem's, hiding idem's among them (tests/storm/FINDINGS.md, docs/distributed-store.md):
# 2.9 cannot fsync each write and lost outcomes after SIGKILLs and quorum losses; 2.10.27 with
# every write fsynced let a restarted server lead the stream before its catch-up was done
# (nats-server pull request 7040, "partial catchup protection", released in 2.12).
#
#   bash scripts/fetch-nats-server.sh [DIR]
#
# DIR defaults to ~/.cache/idem/nats-server-SUITE; IDEM_DEBIAN_SUITE=trixie gets Debian 13's 2.10.
# Prints the server's path. When DIR already has it, prints the path and reaches no network. The
# chain is checked as apt checks it: the suite's InRelease signature against
# debian-archive-keyring, the package index's SHA-256 from InRelease, the package's SHA-256 from
# the index. Needs curl, gpgv, xz and dpkg (scripts/install-deps.sh installs them).
set -euo pipefail

suite=${IDEM_DEBIAN_SUITE:-forky}
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/idem/nats-server-$suite}
mirror=${IDEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
arch=$(dpkg --print-architecture)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

fail() {
  echo "fetch-nats-server: $*" >&2
  exit 1
}

if [[ -x "$dir/usr/sbin/nats-server" ]]; then
  echo "$dir/usr/sbin/nats-server"
  exit 0
fi
for tool in curl gpgv xz dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || fail "$tool is needed"
done
[[ -f "$keyring" ]] || fail "no $keyring (apt-get install debian-archive-keyring)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsS -o "$tmp/InRelease" "$mirror/dists/$suite/InRelease" ||
  fail "cannot download $mirror/dists/$suite/InRelease"
gpgv --keyring "$keyring" --output "$tmp/Release" "$tmp/InRelease" 2>"$tmp/gpgv.log" ||
  fail "the signature of $suite's InRelease does not verify: $(cat "$tmp/gpgv.log")"

index=main/binary-$arch/Packages.xz
# The Release file lists MD5 first and SHA256 after; the last line naming the index is SHA-256.
index_sum=$(awk -v f="$index" '$3 == f { sum = $1 } END { print sum }' "$tmp/Release")
[[ ${#index_sum} == 64 ]] || fail "$suite's Release names no SHA-256 for $index"
curl -fsS -o "$tmp/Packages.xz" "$mirror/dists/$suite/$index" || fail "cannot download $index"
echo "$index_sum  $tmp/Packages.xz" | sha256sum -c --quiet - || fail "$index does not match Release"

read -r file package_sum < <(xz -dc "$tmp/Packages.xz" | awk '
  /^Package: / { p = ($2 == "nats-server") }
  p && /^Filename: / { f = $2 }
  p && /^SHA256: / { s = $2 }
  /^$/ && p && f != "" { print f, s; exit }')
[[ -n "${file:-}" && ${#package_sum} == 64 ]] || fail "no nats-server in $suite's $index"
curl -fsS -o "$tmp/nats-server.deb" "$mirror/$file" || fail "cannot download $mirror/$file"
echo "$package_sum  $tmp/nats-server.deb" | sha256sum -c --quiet - ||
  fail "$file does not match the package index"

mkdir -p "$dir"
dpkg-deb -x "$tmp/nats-server.deb" "$dir"
"$dir/usr/sbin/nats-server" --version >&2
echo "$dir/usr/sbin/nats-server"
