#!/bin/sh
# Renders every page in man/man3 with all groff warnings on (what
# `man --warnings` does), for the terminal (utf8) and for print (ps), and fails
# on any warning: a bad macro, a table too wide, a missing glyph.
# Usage: check_render.sh SOURCE_DIR
set -eu
command -v groff >/dev/null || { echo "man: groff is needed (Debian: groff-base)"; exit 1; }
fail=0 pages=0
for page in "$1"/man/man3/*.3; do
    pages=$((pages + 1))
    for device in utf8 ps; do
        warnings=$(groff -man -t -ww -z -T"$device" "$page" 2>&1 >/dev/null) || {
            echo "man: groff failed on $(basename "$page") (-T$device)"; fail=1; }
        if [ -n "$warnings" ]; then
            echo "man: $(basename "$page") (-T$device):"
            echo "$warnings"
            fail=1
        fi
    done
done
[ "$pages" -gt 0 ] || { echo "man: no pages in $1/man/man3"; exit 1; }
[ "$fail" -eq 0 ] && echo "man: $pages pages render without warnings"
exit "$fail"
