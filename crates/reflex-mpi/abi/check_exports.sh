#!/bin/sh
# check_exports.sh -- does a built libmpi.so export the whole ABI?
#
# Checks that LIB (default: the installed or built libmpi) has soname
# libmpi.so.12 and exports, with default visibility, every MPI_ and PMPI_
# function of functions.txt and every symbol of extra_symbols.txt, data
# objects with the size listed there.
#
# Usage: check_exports.sh [LIB]     exit 0 when complete, 1 otherwise
# SHOW=N lists up to N missing symbols (default 40).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
lib=${1:-${CARGO_TARGET_DIR:-$repo/target}/release/libmpi.so}
[ -f "$lib" ] || {
    echo "check_exports: $lib not found (build it, or pass its path)" >&2
    exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/reflex-check-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != libmpi.so.12 ]; then
    echo "check_exports: soname is '${soname:-none}', expected libmpi.so.12"
    status=1
fi

# "name size type" of every defined, exported symbol.
readelf -W --dyn-syms "$lib" |
    awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" { sub(/@.*/, "", $8); print $8, $3, $4 }' |
    sort -u >"$tmp/exported"

grep -v '^[[:space:]]*#' "$here/functions.txt" | sed -n 's/^[^(]*[ *]\(MPI_[A-Za-z0-9_]*\)(.*/\1/p' >"$tmp/functions"
{
    sed 's/.*/& - FUNC/' "$tmp/functions"
    sed 's/^MPI_\(.*\)/PMPI_\1 - FUNC/' "$tmp/functions"
    grep -v '^[[:space:]]*#' "$here/extra_symbols.txt" | awk 'NF { print $1, $3, ($2 == "data" ? "OBJECT" : "FUNC") }'
} >"$tmp/wanted"

missing=0
while read -r name size type; do
    line=$(grep "^$name " "$tmp/exported" || true)
    if [ -z "$line" ]; then
        missing=$((missing + 1))
        [ "$missing" -le "${SHOW:-40}" ] && echo "check_exports: missing $name"
        continue
    fi
    set -- $line
    if [ "$3" != "$type" ]; then
        echo "check_exports: $name is a $3, expected $type"
        status=1
    elif [ "$size" != - ] && [ "$2" != "$size" ]; then
        echo "check_exports: $name has $2 bytes, expected $size"
        status=1
    fi
done <"$tmp/wanted"
[ "$missing" -gt "${SHOW:-40}" ] && echo "check_exports: ... and $((missing - ${SHOW:-40})) more missing"
[ "$missing" -eq 0 ] || status=1
echo "check_exports: $(wc -l <"$tmp/wanted") symbols wanted, $missing missing ($lib)"
exit $status
