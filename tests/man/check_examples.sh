#!/bin/sh
# Compiles every page's EXAMPLES program (the .EX blocks under .SH EXAMPLES,
# with the roff escapes turned back into C) against the headers in include/,
# strict warnings on, links it against the shared library and runs it: each
# example checks its own result and exits non-zero when it is wrong.
# Usage: check_examples.sh SOURCE_DIR WORK_DIR CC LIBSLUICE_SO
set -eu
src=$1 work=$2 cc=$3 lib=$4
rm -rf "$work" && mkdir -p "$work"
fail=0 built=0
for page in "$src"/man/man3/*.3; do
    name=$(basename "$page" .3)
    awk '/^\.SH EXAMPLES/ { on = 1; next } /^\.SH/ { on = 0 }
         on && /^\.EE/ { code = 0 } on && code { print } on && /^\.EX/ { code = 1 }' "$page" |
        sed 's/\\&//g; s/\\-/-/g; s/\\(aq/'"'"'/g; s/\\(dq/"/g; s/\\e/\\/g' > "$work/$name.c"
    [ -s "$work/$name.c" ] || { echo "man: $name.3 has no EXAMPLES program"; fail=1; continue; }
    if ! "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$src/include" "$work/$name.c" "$lib" \
            -Wl,-rpath,"$(dirname "$lib")" -pthread -o "$work/$name" 2>"$work/$name.log"; then
        echo "man: the example of $name.3 does not compile:"; cat "$work/$name.log"; fail=1; continue
    fi
    if ! timeout 60 "$work/$name" >"$work/$name.out" 2>&1; then
        echo "man: the example of $name.3 failed:"; cat "$work/$name.out"; fail=1; continue
    fi
    built=$((built + 1))
done
[ "$fail" -eq 0 ] && echo "man: $built examples compile and run"
exit "$fail"
