#!/bin/sh
# Installs the build tree BUILD into a scratch prefix, then builds and runs
# the example in this folder as an outside project would: with CMake's
# find_package(sluice), and with pkg-config against the shared and the static
# library. Usage: run.sh BUILD_DIR SCRATCH_DIR
set -eu
build=$1 scratch=$2 here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
expect() { "$@" | grep -q "got 5" || { echo "consumer: $* printed no 'got 5'"; exit 1; }; }

cmake -S "$here" -B "$scratch/cmake" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/cmake" >/dev/null
LD_LIBRARY_PATH="$scratch/prefix/lib" expect "$scratch/cmake/consumer"

export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
cc -std=c11 -Wall -Werror "$here/main.c" $(pkg-config --cflags --libs sluice) -pthread \
   -o "$scratch/pc-shared"
LD_LIBRARY_PATH="$scratch/prefix/lib" expect "$scratch/pc-shared"
cc -std=c11 -Wall -Werror "$here/main.c" $(pkg-config --cflags sluice) \
   "$scratch/prefix/lib/libsluice.a" $(pkg-config --static --libs-only-l sluice | sed 's/-lsluice//') \
   -pthread -o "$scratch/pc-static"
expect "$scratch/pc-static"
echo "consumer: find_package, pkg-config shared and static: ok"
