#!/bin/sh
# Runs one example briefly and checks what it printed: it must exit 0 and its
# output must match every extended regular expression given after "--expect".
# Usage: smoke.sh BINARY [ARGS...] --expect REGEX [REGEX...]
set -u
bin=$1; shift
args=""
while [ $# -gt 0 ] && [ "$1" != "--expect" ]; do
    args="$args $(printf '%s' "$1" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"
    shift
done
[ $# -gt 0 ] && shift
out=$(eval "\"$bin\" $args" </dev/null 2>&1); rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ]; then echo "smoke: $bin exited with $rc"; exit 1; fi
for re in "$@"; do
    printf '%s\n' "$out" | grep -Eq -- "$re" || { echo "smoke: no line matches /$re/"; exit 1; }
done
echo "smoke: ok"
