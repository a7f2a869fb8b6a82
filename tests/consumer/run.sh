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

# The version: one number in version.h, the same in the package, pkg-config
# and the SONAME (major.minor while the major is 0, the major alone after).
part() { sed -n "s/^#define SL_VERSION_$1 \([0-9]*\)$/\1/p" "$scratch/prefix/include/sluice/version.h"; }
major=$(part MAJOR) minor=$(part MINOR) patch=$(part PATCH)
[ "$(pkg-config --modversion sluice)" = "$major.$minor.$patch" ] ||
    { echo "consumer: pkg-config says $(pkg-config --modversion sluice), version.h $major.$minor.$patch"; exit 1; }
if [ "$major" = 0 ]; then soname=libsluice.so.$major.$minor; else soname=libsluice.so.$major; fi
readelf -d "$scratch/prefix/lib/libsluice.so" | grep -q "Library soname: \[$soname\]" ||
    { echo "consumer: the SONAME is not $soname"; readelf -d "$scratch/prefix/lib/libsluice.so" | grep SONAME; exit 1; }
[ -e "$scratch/prefix/lib/$soname" ] || { echo "consumer: $soname was not installed"; exit 1; }
# A project that asks for a newer minor (0.x) or major (x.0) must be refused.
if [ "$major" = 0 ]; then newer=0.$((minor + 1)); else newer=$((major + 1)).0; fi
sed "s/find_package(sluice [0-9.]* REQUIRED)/find_package(sluice $newer REQUIRED)/" \
    "$here/CMakeLists.txt" > "$scratch/newer.cmake"
mkdir -p "$scratch/newer-src" && cp "$scratch/newer.cmake" "$scratch/newer-src/CMakeLists.txt" &&
    cp "$here/main.c" "$scratch/newer-src/"
if cmake -S "$scratch/newer-src" -B "$scratch/newer" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
        >/dev/null 2>&1; then
    echo "consumer: find_package(sluice $newer) accepted sluice $major.$minor.$patch"; exit 1
fi
echo "consumer: version $major.$minor.$patch, SONAME $soname, find_package($newer) refused: ok"

# The man pages: the overview, a flavour's page and a function's alias page
# (a .so to its header's page) are installed and render without a warning.
mandir="$scratch/prefix/share/man"
for page in man3/sluice.3 man3/sluice_chan.3 man3/sl_chan_send.3; do
    [ -f "$mandir/$page" ] || { echo "consumer: $mandir/$page was not installed"; exit 1; }
    out=$(cd "$mandir" && groff -man -t -ww -Tutf8 "$page" 2>"$scratch/groff.err") ||
        { echo "consumer: groff failed on $page"; cat "$scratch/groff.err"; exit 1; }
    [ ! -s "$scratch/groff.err" ] || { echo "consumer: $page:"; cat "$scratch/groff.err"; exit 1; }
    echo "$out" | grep -q "sluice Library Functions" || { echo "consumer: $page rendered empty"; exit 1; }
done
grep -qx '.so man3/sluice_chan.3' "$mandir/man3/sl_chan_send.3" ||
    { echo "consumer: sl_chan_send.3 does not lead to sluice_chan.3"; exit 1; }
if command -v man >/dev/null && man -M "$mandir" -w 3 sluice_chan >/dev/null 2>&1; then
    [ "$(man -M "$mandir" -w 3 sl_chan_send)" = "$mandir/man3/sluice_chan.3" ] ||
        { echo "consumer: man 3 sl_chan_send does not lead to sluice_chan(3)"; exit 1; }
    echo "consumer: man pages installed, render, and man finds them: ok"
else
    echo "consumer: man pages installed and render: ok (no working man(1) to look them up)"
fi
