#!/bin/sh
# Checks that the man pages cover the public API: every SL_API function
# declared in include/sluice/*.h is named in the NAME section of its header's
# page and appears in that page's SYNOPSIS with the header's exact prototype
# (compared as rendered text, whitespace collapsed); so is every typed-wrapper
# macro and every static inline function defined at a header's top level. A header's page is the one
# whose NAME lists sluice_<header> (base.h is covered by sluice_status.3).
# Also checks that every page carries the project's version (version.h) and that sluice(3)
# refers to every other page. Internal names (sl__*) are not API and are skipped.
# Usage: check_names.sh SOURCE_DIR
set -eu
src=$1 man=$1/man/man3
command -v groff >/dev/null || { echo "man: groff is needed (Debian: groff-base)"; exit 1; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail=0
complain() { echo "man: $*"; fail=1; }

# The names a page's NAME section lists, one per line.
page_names() {
    awk '/^\.SH NAME/ { on = 1; next } /^\.SH/ { on = 0 } on' "$1" | tr '\n' ' ' |
        sed 's/\\-.*//' | tr ', ' '\n\n' | grep -v '^$' || true
}

# The rendered SYNOPSIS of a page, on one line, whitespace collapsed.
synopsis() {
    groff -man -t -Tascii -P-cbou "$1" 2>/dev/null |
        awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' | tr '\n' ' ' |
        tr -s ' \t' '  ' | sed 's/^ //; s/ $//'
}

# Every SL_API declaration of a header, on one line each, without SL_API.
declarations() {
    awk '/^[ \t]*SL_API[ \t]/ { buf = ""; on = 1 }
         on { buf = buf " " $0; if (index($0, ";")) { on = 0; sub(/;.*/, ";", buf); print buf } }' "$1" |
        sed 's/SL_API//' | tr -s ' \t' '  ' | sed 's/^ //; s/ $//'
}

# The version is written once, in version.h (as the build reads it).
part() { sed -n "s/^#define SL_VERSION_$1 \([0-9]*\)$/\1/p" "$src/include/sluice/version.h"; }
version=$(part MAJOR).$(part MINOR).$(part PATCH)
for page in "$man"/*.3; do
    page_names "$page" > "$tmp/$(basename "$page").names"
    grep -q "^\.TH [A-Z_]* 3 [0-9-]* \"sluice $version\"" "$page" ||
        complain "$(basename "$page"): .TH does not say \"sluice $version\""
done

checked=0
for header in "$src"/include/sluice/*.h; do
    concept=$(basename "$header" .h)
    page=$(grep -lx "sluice_$concept" "$tmp"/*.names 2>/dev/null | head -n 1 || true)
    if [ -z "$page" ]; then
        complain "no page lists sluice_$concept in its NAME (for $(basename "$header"))"
        continue
    fi
    page=$man/$(basename "$page" .names)
    synopsis "$page" > "$tmp/synopsis"
    declarations "$header" > "$tmp/decls"
    while IFS= read -r decl; do
        # The declared name: the identifier before the parameter list, once
        # SL_ATOMIC(T) is out of the way; declarations without one are variables.
        bare=$(printf '%s\n' "$decl" | sed 's/SL_ATOMIC([^)]*)//g')
        case $bare in *\(*) ;; *) continue ;; esac
        name=$(printf '%s\n' "$bare" | sed 's/(.*//; s/.*[^A-Za-z0-9_]//')
        case $name in sl__*) continue ;; esac
        checked=$((checked + 1))
        grep -qx "$name" "$tmp/$(basename "$page").names" ||
            complain "$name ($(basename "$header")) is missing from the NAME of $(basename "$page")"
        grep -qF "$decl" "$tmp/synopsis" ||
            complain "$(basename "$page") SYNOPSIS lacks the prototype: $decl"
    done < "$tmp/decls"
    # The typed-wrapper macros (#define SL_*_TYPED) and the static inline
    # functions a header defines outside them (SL_TYPED_FN at a line's start,
    # as timer.h's): named too, so that `man 3` finds them.
    for name in $(sed -n 's/^#define \(SL_[A-Z_]*_TYPED\)(.*/\1/p
                          s/^SL_TYPED_FN [^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' \
                      "$header"); do
        checked=$((checked + 1))
        grep -qx "$name" "$tmp/$(basename "$page").names" ||
            complain "$name ($(basename "$header")) is missing from the NAME of $(basename "$page")"
    done
done
[ "$checked" -gt 0 ] || complain "found no SL_API function in $src/include/sluice"

# The overview refers to every other page.
for page in "$man"/*.3; do
    name=$(basename "$page" .3)
    [ "$name" = sluice ] && continue
    grep -q "^\.BR $name (3)" "$man/sluice.3" || complain "sluice.3 does not refer to $name(3)"
done

[ "$fail" -eq 0 ] && echo "man: $checked functions, each named and prototyped on its page"
exit "$fail"
