#!/usr/bin/env bash
# The storm (tests/storm, docs/testing.md): a seeded run of clients and faults against real
# `idem serve` gateways on SQLite, a private PostgreSQL server and a private three-node JetStream
# cluster, checked by one checker over the recorded history.
#
#   bash scripts/storm.sh [--seed N] [--minutes M] [--stores sqlite,postgres,nats]
#                         [--profile short|long] [--idem PATH] [--worker PATH]
#                         [--nats-server PATH]
#
# --profile short (the default; CI) runs about a minute per store, --profile long 20 minutes per
# store (a developer's machine, nightly). --minutes sets the minutes of load and faults per store.
# Without --idem it uses build/dev's idem, building it (through the shared build lock) when it is
# missing. A failing run prints its seed, keeps its history (JSON lines) and prints the command
# that replays the same schedule; exit status 1. Needs python3, and for the server stores what
# scripts/pg-fixture.sh and scripts/nats-fixture.sh need. --nats-server runs the JetStream
# cluster on that nats-server (the fixture's IDEM_NATS_SERVER; `--nats-server system` for the
# one on PATH). Without it the storm runs scripts/fetch-nats-server.sh's (Debian forky's 2.15,
# fetched once, not installed): older servers lose acknowledged writes under the storm's faults.
# On 2.10 or later every write is fsynced (sync_interval: always) and an acknowledged write the
# store then lacks is a violation.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
idem=""
worker=""
args=()
while (($#)); do
  case "$1" in
    --idem) idem=$2; shift 2 ;;
    --idem=*) idem=${1#--idem=}; shift ;;
    --worker) worker=$2; shift 2 ;;
    --worker=*) worker=${1#--worker=}; shift ;;
    --nats-server) export IDEM_NATS_SERVER=$2; shift 2 ;;
    --nats-server=*) export IDEM_NATS_SERVER=${1#--nats-server=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ -z "$idem" ]]; then
  idem=$repo/build/dev/src/cli/idem
  if [[ ! -x "$idem" ]]; then
    echo "storm: building idem (build/dev)"
    (cd "$repo" && flock /tmp/idem-build.lock cmake --build --preset dev -j2 --target idem)
  fi
fi
if [[ ! -x "$idem" ]]; then
  echo "storm: no idem program at $idem (build it, or pass --idem PATH)" >&2
  exit 2
fi
# The library workers on PostgreSQL (tests/storm/worker): build/dev's, built when missing; the
# storm says "skipped" without them.
if [[ -z "$worker" ]]; then
  worker=$repo/build/dev/tests/storm/worker/idem-storm-worker
  if [[ ! -x "$worker" && -f "$repo/build/dev/build.ninja" ]]; then
    echo "storm: building idem-storm-worker (build/dev)"
    (cd "$repo" && flock /tmp/idem-build.lock cmake --build --preset dev -j2 \
      --target idem-storm-worker) || true
  fi
fi
if [[ -x "$worker" ]]; then
  args+=(--worker "$worker")
fi
if [[ "${IDEM_NATS_SERVER:-}" == system ]]; then
  unset IDEM_NATS_SERVER
elif [[ -z "${IDEM_NATS_SERVER:-}" ]]; then
  if server=$("$repo/scripts/fetch-nats-server.sh"); then
    export IDEM_NATS_SERVER=$server
  else
    echo "storm: could not fetch the storm's nats-server (above); the JetStream store runs on" \
      "the system's, which can lose acknowledged writes (docs/distributed-store.md)" >&2
  fi
fi
if ! command -v python3 >/dev/null; then
  echo "storm: python3 is needed (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
exec python3 -B "$repo/tests/storm/storm.py" --idem "$idem" "${args[@]}"
