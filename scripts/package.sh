#!/usr/bin/env bash
# Builds the Debian packages idem and libidem-dev (cmake/IdemDeb.cmake) from a release build of
# their own (preset "package": optimised as the release preset, install prefix /usr, no tests,
# benchmarks or examples; cpack strips the program) and leaves them in build/package/:
# idem_VERSION_ARCH.deb and libidem-dev_VERSION_ARCH.deb. Extra arguments go to the configure
# step (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
#   bash scripts/package.sh && sudo apt install ./build/package/idem_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset package "$@"
cmake --build --preset package -j "$(nproc)"
rm -f build/package/*.deb
(cd build/package && cpack -G DEB)
ls -1 "$PWD"/build/package/*.deb
