#!/bin/sh
# Installs the Debian packages a target needs, if any are missing.
# Usage: scripts/install-deps.sh PACKAGE...
# As root it runs apt-get; otherwise it prints the one command to run and fails.
set -eu
if ! command -v dpkg-query >/dev/null 2>&1; then
    # Not Debian: say what is needed, under Debian's names, and let CMake
    # report what it cannot find.
    echo "sluice: not a Debian system; make sure these (Debian names) are installed: $*" >&2
    exit 0
fi
missing=""
for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "sluice: missing packages:$missing" >&2
    echo "sluice: run this, then try again:" >&2
    echo "    sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "sluice: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq $missing >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq $missing
}
