#!/bin/sh
# Prints what `make test` accounted for: one line per preset and test program
# and kind ("messages exactly once", "jobs ran or discarded once", …), then a
# total per kind across presets. Input: the files the tests append to through
# SL_ACCOUNT_FILE (tests/harness.h, sl_test_account), one per preset, given as
# build/<preset>/accounted.txt.
set -eu
[ $# -gt 0 ] || { echo "usage: $0 build/<preset>/accounted.txt..." >&2; exit 2; }
echo "==== accounted for (checked, not merely run) ===="
for f in "$@"; do
    [ -s "$f" ] || continue
    preset=$(basename "$(dirname "$f")")
    awk -F'\t' -v preset="$preset" '
        { sum[$1] += $2 }
        END { for (k in sum) printf "%-7s %-62s %15.0f\n", preset, k, sum[k] }' "$f" | sort
done
cat "$@" 2>/dev/null | awk -F'\t' '
    { split($1, a, " "); kind = substr($1, length(a[1]) + 2); sum[kind] += $2 }
    END { for (k in sum) printf "total   %-62s %15.0f\n", k, sum[k] }' | sort
