#!/usr/bin/env bash
# Installs, by Debian package name, whatever idem needs to build, test and run that is missing.
# Safe to run again: when everything is present it changes nothing and reaches no network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libssl-dev libsqlite3-dev sqlite3 libpq-dev postgresql
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libcli11-dev libspdlog-dev libfmt-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libnats-dev nats-server
  libfaketime help2man curl python3
  debian-archive-keyring gpgv xz-utils
  iproute2
  python3-psycopg
  libsystemd-dev systemd dpkg-dev lintian
  libgoogle-perftools-dev
  lld
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "idem: installing missing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The storm's JetStream cluster runs a newer nats-server than Debian 12 packages (see the script):
# fetched once into the user's cache, checked against Debian's signatures; nothing installed.
"$(dirname "$0")/fetch-nats-server.sh" >/dev/null
