#!/usr/bin/env bash
# The package test: installs idem's build into an empty prefix, then builds and runs a project
# outside the tree (tests/package/consumer, plus examples/library/library_example.cc) against
# that prefix only, through find_package(idem) or through pkg-config. "subproject" builds the
# same project with idem's sources added by add_subdirectory, as FetchContent does (no install;
# it compiles the libraries again, so CTest does not run it).
#
# usage: run-consumer.sh cmake|pkg-config|subproject BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
mode=$1 build=$2 source=$3 work=$4
example=$source/examples/library/library_example.cc

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
if [[ $mode != subproject ]]; then
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
  subproject)
    cmake -S "$source/tests/package/consumer" -B "$work/build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Debug -DIDEM_SOURCE_DIR="$source" -DIDEM_EXAMPLE_SOURCE="$example"
    cmake --build "$work/build"
    bin=$work/build
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
    echo "usage: run-consumer.sh cmake|pkg-config|subproject BUILD_DIR SOURCE_DIR WORK_DIR" >&2
    exit 2
    ;;
esac

"$bin/library_example" "$work/example.db"
"$bin/retry_only"
echo "package test ($mode): passed"
