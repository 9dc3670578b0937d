#!/usr/bin/env bash
# The package test: installs idem's build into an empty prefix, then builds and runs a project
# outside the tree (tests/package/consumer, plus examples/library/library_example.cc) against
# that prefix only, through find_package(idem) or through pkg-config.
#   cmake, pkg-config   install BUILD_DIR (the static libraries of the calling build)
#   fetchcontent        builds the project with idem's sources pulled in by FetchContent, as a
#                       user's project would: tests off, C++20 from idem's targets, without
#                       PostgreSQL and without NATS (IDEM_WITH_POSTGRES=OFF, IDEM_WITH_NATS=OFF,
#                       checking that neither libpq nor libnats is linked), and with idem's
#                       libraries shared (BUILD_SHARED_LIBS=ON); then installs that build of idem
#                       (IDEM_INSTALL=ON) and runs the cmake and pkg-config modes against the
#                       shared libraries. One compile of the libraries covers the subproject, the
#                       shared libraries and the package without the optional stores.
# The fetchcontent mode compiles the libraries again, with no optimisation and no debug
# information (what it checks is the packaging, and the test command's time is CI's budget); it
# reuses the calling build's compiler launcher (ccache) when it has one: IDEM_COMPILER_LAUNCHER;
# without one (CI's clean clone) each library's common headers are precompiled (IDEM_PCH, as the
# dev preset does), which takes about 60% off each file's compile, and its files are compiled
# eight at a time as one (CMAKE_UNITY_BUILD, as scripts/test.sh does).
#
# usage: run-consumer.sh cmake|pkg-config|fetchcontent BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
mode=$1 build=$2 source=$3 work=$4
example=$source/examples/library/library_example.cc
launcher=()
if [[ -n ${IDEM_COMPILER_LAUNCHER:-} ]]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$IDEM_COMPILER_LAUNCHER"
    -DCMAKE_C_COMPILER_LAUNCHER="$IDEM_COMPILER_LAUNCHER")
fi

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
if [[ $mode != fetchcontent ]]; then
  cmake --install "$build" --prefix "$prefix" >"$work/install.log"
  libdir=$(dirname "$(find "$prefix" -name 'idem.pc' -path '*/pkgconfig/*' | head -n1)")/..
fi

case $mode in
  cmake)
    # Only the prefix is searched for idem (not the build tree, not a user package registry).
    cmake -S "$source/tests/package/consumer" -B "$work/build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DIDEM_EXAMPLE_SOURCE="$example"
    cmake --build "$work/build"
    bin=$work/build
    ;;
  fetchcontent)
    cmake -S "$source/tests/package/consumer" -B "$work/build" -G Ninja \
      -DCMAKE_BUILD_TYPE= -DIDEM_SOURCE_DIR="$source" -DIDEM_EXAMPLE_SOURCE="$example" \
      -DIDEM_WITH_POSTGRES=OFF -DIDEM_WITH_NATS=OFF -DBUILD_SHARED_LIBS=ON -DIDEM_INSTALL=ON \
      -DIDEM_PCH=ON -DCMAKE_UNITY_BUILD=ON "${launcher[@]}" \
      >"$work/configure.log"
    cmake --build "$work/build" -j 2 >"$work/build.log"
    bin=$work/build
    # ldd's output is read whole before it is searched: `ldd | grep -q` under pipefail fails
    # whenever grep exits at its first match while ldd is still writing (SIGPIPE), which made
    # this check fail now and then on a build that did link the shared library.
    linked=$(ldd "$bin/library_example")
    if ! grep -q 'libidem_core\.so' <<<"$linked"; then
      echo "library_example does not link the shared libidem_core.so (BUILD_SHARED_LIBS=ON)" >&2
      exit 1
    fi
    if grep -q libpq <<<"$linked"; then
      echo "library_example links libpq although IDEM_WITH_POSTGRES=OFF" >&2
      exit 1
    fi
    if grep -q libnats <<<"$linked"; then
      echo "library_example links libnats although IDEM_WITH_NATS=OFF" >&2
      exit 1
    fi
    registered=$(grep -rlsE "add_test|_include.cmake" --include=CTestTestfile.cmake \
      "$work/build/_deps" || true)
    if [[ -n $registered ]]; then
      echo "idem registered its tests inside a project that only uses it" >&2
      exit 1
    fi
    if [[ -n $(find "$work/build/_deps" -type f -name '*_test') ]]; then
      echo "idem built its tests inside a project that only uses it" >&2
      exit 1
    fi
    ;;
  pkg-config)
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    mkdir -p "$work/build"
    bin=$work/build
    # shellcheck disable=SC2046  # pkg-config's output is a list of flags
    c++ -std=c++20 -o "$bin/library_example" "$example" \
      $(pkg-config --cflags --libs idem) -Wl,-rpath,"$libdir"
    # shellcheck disable=SC2046
    c++ -std=c++20 -o "$bin/retry_only" "$source/tests/package/consumer/retry_only.cc" \
      $(pkg-config --cflags --libs idem-retry) -Wl,-rpath,"$libdir"
    ;;
  *)
    echo "usage: run-consumer.sh cmake|pkg-config|fetchcontent BUILD_DIR SOURCE_DIR WORK_DIR" >&2
    exit 2
    ;;
esac

"$bin/library_example" "$work/example.db"
"$bin/retry_only"
if [[ $mode == fetchcontent ]]; then
  # The shared libraries this build made, installed and used from outside like any package.
  for sub in cmake pkg-config; do
    "$0" "$sub" "$work/build/_deps/idem-build" "$source" "$work/shared-$sub"
  done
fi
echo "package test ($mode): passed"
