#!/bin/sh
# Checks that no public header's inline code shadows a program's file-scope
# name: a program compiled with -Wshadow that declares, before its includes,
# a variable named like any lowercase word in the code of include/sluice/*.h
# (comments stripped by the compiler: every parameter, local and field name
# the headers use) must draw no warning. The headers' inline definitions name
# their parameters and locals sl_*_ for this (sluice/chan.h, SL_CHAN_TYPED).
# A word that cannot be a variable beside the headers (a keyword, a type, a
# function the headers call) is refused by the compiler with an error and
# left out on the next try. Both with and without SL_DEBUG_CHECKS, whose
# inline code differs.
# Usage: check_shadow.sh SOURCE_DIR CC
set -eu
src=$1 cc=$2
export LC_ALL=C # plain quotes around names in the compiler's messages
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

# The headers' code: comments and string literals blanked out.
code() {
    awk '{
        out = ""; i = 1; n = length($0)
        while (i <= n) {
            c = substr($0, i, 1); d = substr($0, i, 2)
            if (incomment) { if (d == "*/") { incomment = 0; i += 2 } else i++; continue }
            if (d == "/*") { incomment = 1; i += 2; out = out " "; continue }
            if (d == "//") break
            if (c == "\"") {
                i++
                while (i <= n && substr($0, i, 1) != "\"")
                    i += substr($0, i, 1) == "\\" ? 2 : 1
                i++; out = out " "; continue
            }
            out = out c; i++
        }
        print out
    }' "$@"
}
# C's keywords, and the macros the standard headers make of some words:
# never a variable's name (the compiler's errors about them need not name them).
keywords='auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof
static struct switch typedef union unsigned void volatile while bool true false
alignas alignof noreturn static_assert thread_local complex imaginary defined
include define undef ifdef ifndef endif elif pragma error'
printf '%s\n' $keywords > "$tmp/keywords"
code "$src"/include/sluice/*.h | grep -o '[a-z_][a-z0-9_]*' | grep -v '^sl_\|^__\|^memory_order\|^atomic_' |
    sort -u | grep -vxF -f "$tmp/keywords" > "$tmp/words"
[ -s "$tmp/words" ] || { echo "headers: found no word to declare"; exit 1; }

for debug in 0 1; do
    cp "$tmp/words" "$tmp/names"
    tries=0
    while :; do
        {
            printf 'extern int %s;\n' "$(paste -s -d, "$tmp/names" | sed 's/,/, /g')"
            for h in "$src"/include/sluice/*.h; do echo "#include <sluice/$(basename "$h")>"; done
            echo "int main(void) { return 0; }"
        } > "$tmp/shadow.c"
        "$cc" -std=c11 -Wshadow -DSL_DEBUG_CHECKS=$debug -I"$src/include" \
            -c "$tmp/shadow.c" -o "$tmp/shadow.o" > "$tmp/err" 2>&1 && ok=1 || ok=0
        if [ "$ok" = 1 ]; then
            grep -q '\[-Wshadow' "$tmp/err" || break
            echo "headers: an inline definition shadows a program's name (SL_DEBUG_CHECKS=$debug):"
            grep '\[-Wshadow' "$tmp/err" | head -n 40 | cut -c1-200
            exit 1
        fi
        # Names the compiler refused as variables (a type, a function: an
        # error naming them): left out, and the file compiled again.
        grep "error:" "$tmp/err" | grep -o "'[a-z_][a-z0-9_]*'" | tr -d "'" | sort -u |
            grep -xF -f "$tmp/names" > "$tmp/refused" || true
        tries=$((tries + 1))
        if [ ! -s "$tmp/refused" ] || [ "$tries" -gt 20 ]; then
            echo "headers: the test program does not compile (SL_DEBUG_CHECKS=$debug):"
            grep "error:" "$tmp/err" | head -n 10 | cut -c1-200
            exit 1
        fi
        grep -vxF -f "$tmp/refused" "$tmp/names" > "$tmp/left" && mv "$tmp/left" "$tmp/names"
    done
done
echo "headers: $(wc -l < "$tmp/names") file-scope names declared before every header, none shadowed"
