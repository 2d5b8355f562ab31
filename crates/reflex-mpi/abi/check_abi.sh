#!/bin/sh
# check_abi.sh -- prove that Reflex's mpi.h has MPICH's ABI.
#
# 1. Instantiates mpi_base.h.in (no prototypes, a dummy version).
# 2. Compiles it alone with strict warnings, as C99 and as C++11.
# 3. Lists every fact it defines (abi_items.py) and builds check_abi.c as C
#    and as C++ against MPICH's mpi.h (linked with libmpich) and against
#    Reflex's (linked with stubs made from extra_symbols.txt); the printed
#    facts must be identical.
# 4. Lists what MPICH's mpi.h defines and Reflex's does not; everything
#    there must be an MPICH-specific name of the documented ignore list.
# 5. Runs check_functions.py; compiles Reflex's header with the prototypes
#    of functions.txt (and the generated header, when present) followed by
#    MPICH's declarations of the same functions: the compiler confirms every
#    prototype is compatible.
#
# Usage: check_abi.sh            (MPICH headers found in the Debian paths
#                                 or MPICH_INCLUDE / MPICH_LIBDIR)
# Exits 0 when identical, 1 on a difference, 77 when MPICH is not installed.
# KEEP_TMP=1 keeps the work directory (printed facts, diffs) for inspection.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
cxx=${CXX:-c++}

mpich_include=${MPICH_INCLUDE:-/usr/include/x86_64-linux-gnu/mpich}
mpich_libdir=${MPICH_LIBDIR:-/usr/lib/x86_64-linux-gnu}
if [ ! -f "$mpich_include/mpi.h" ]; then
    echo "check_abi: MPICH's mpi.h not found in $mpich_include (set MPICH_INCLUDE); skipped" >&2
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/reflex-check-abi.XXXXXX")
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT INT TERM

# 1. Reflex's header from the template.
mkdir "$tmp/reflex"
sed -e '/@PROTOTYPES@/d' -e 's/@VERSION@/0.0.0-check/' "$here/mpi_base.h.in" >"$tmp/reflex/mpi.h"

# 2. Header hygiene.
printf '#include <mpi.h>\nint main(void) { return 0; }\n' >"$tmp/empty.c"
$cc -std=c99 -Wall -Wextra -pedantic -Werror -I"$tmp/reflex" -c "$tmp/empty.c" -o "$tmp/empty_c.o"
$cxx -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I"$tmp/reflex" -c "$tmp/empty.c" -o "$tmp/empty_cxx.o"

# 3. Facts, printed by both headers.
python3 "$here/abi_items.py" "$tmp/reflex/mpi.h" "$here/extra_symbols.txt" >"$tmp/items.h"

# Stubs for the symbols Reflex's header refers to: functions get an empty
# body, data objects are zero-initialised definitions.
{
    echo '#include <mpi.h>'
    grep -v '^[[:space:]]*#' "$here/extra_symbols.txt" | grep -v '^[[:space:]]*$' |
        while read -r name kind size decl; do
            case $kind in
            function) echo "$decl { (void)oldcomm; (void)keyval; (void)extra_state; (void)attribute_val_in; (void)attribute_val_out; (void)flag; return 0; }" ;;
            data) echo "$decl;" ;;
            *) echo "check_abi: bad kind '$kind' for $name in extra_symbols.txt" >&2; exit 1 ;;
            esac
        done
} >"$tmp/stubs.c"
$cc -std=c11 -I"$tmp/reflex" -c "$tmp/stubs.c" -o "$tmp/stubs.o"

build() { # build LANG NAME INCLUDE LINK...
    lang=$1 name=$2 inc=$3
    shift 3
    if [ "$lang" = c ]; then
        $cc -std=c11 -Wall -Wno-unused -I"$inc" -DABI_ITEMS="\"$tmp/items.h\"" \
            "$here/check_abi.c" "$@" -o "$tmp/$name"
    else
        $cxx -x c++ -std=c++17 -Wall -Wno-unused -I"$inc" -DABI_ITEMS="\"$tmp/items.h\"" \
            "$here/check_abi.c" -x none "$@" -o "$tmp/$name"
    fi
    "$tmp/$name" >"$tmp/$name.out"
}

status=0
for lang in c cxx; do
    build $lang mpich_$lang "$mpich_include" -L"$mpich_libdir" -lmpich -Wl,-rpath,"$mpich_libdir"
    build $lang reflex_$lang "$tmp/reflex" "$tmp/stubs.o"
    if diff -u "$tmp/mpich_$lang.out" "$tmp/reflex_$lang.out" >"$tmp/diff_$lang"; then
        echo "check_abi: $lang: $(wc -l <"$tmp/reflex_$lang.out") facts identical to MPICH"
    else
        echo "check_abi: $lang: facts differ from MPICH (- MPICH, + Reflex):"
        cat "$tmp/diff_$lang"
        status=1
    fi
done

# The sizes promised in extra_symbols.txt must be the sizes the header gives.
grep -v '^[[:space:]]*#' "$here/extra_symbols.txt" | awk '$2 == "data" { print $1, $3 }' |
    while read -r name size; do
        if ! grep -q "^object $name size=$size\( \|\$\)" "$tmp/reflex_c.out"; then
            echo "check_abi: extra_symbols.txt says $name has $size bytes; mpi.h disagrees" >&2
            exit 1
        fi
    done || status=1

# 4. Names MPICH defines that Reflex does not.  MPICH-specific extensions,
# feature-test macros and internals are left out on purpose.
ignore='^(MPIX_|MPICH|MPIIMPL_|QMPI_|HAVE_|ROMIO_|MPIO_INCLUDE$|MPI_PROTO_H_INCLUDED$'
ignore="$ignore|MPI_FILE_DEFINED$|MPI_AINT_FMT_|MPIO_USES_MPI_REQUEST$|MPIO_REQUEST_DEFINED$"
ignore="$ignore|MPIU_DLL_SPEC$|MPIR_T_PVAR_CLASS_(FIRST|LAST|NUMBER)$|MPIX_Grequest_class$"
ignore="$ignore|MPI_DUP_FN$|QMPI_Context$|P?MPIX?_[A-Z0-9_]*_T$)"  # last: QMPI function enum
python3 "$here/abi_items.py" "$tmp/reflex/mpi.h" "$here/extra_symbols.txt" --names |
    sort -u >"$tmp/reflex.names"
python3 "$here/abi_items.py" "$mpich_include/mpi.h" "$here/extra_symbols.txt" --names \
    -- -I"$mpich_include" -DMPICH_SKIP_MPICXX | sort -u >"$tmp/mpich.names"
comm -23 "$tmp/mpich.names" "$tmp/reflex.names" | grep -Ev "$ignore" >"$tmp/missing" || true
if [ -s "$tmp/missing" ]; then
    echo "check_abi: defined by MPICH's mpi.h but missing from Reflex's:"
    sed 's/^/  /' "$tmp/missing"
    status=1
else
    echo "check_abi: every name of MPICH's mpi.h is defined (ignoring MPICH-specific ones)"
fi
# 5. Prototypes.  Reflex's header with the prototypes of functions.txt
# (kinds stripped; MPI_ and PMPI_), and the generated header when there is
# one, each followed by MPICH's own declarations of the same functions: the
# compiler rejects any conflicting type (in C++ inside extern "C", where a
# different parameter list is an error rather than an overload).
python3 "$here/check_functions.py" "$here/functions.txt" "$mpich_include" >"$tmp/functions.out" || status=1
sed 's/^check_functions/check_abi: functions.txt/' "$tmp/functions.out"
grep -v '^[[:space:]]*#' "$here/functions.txt" | grep -v '^[[:space:]]*$' |
    sed -E 's/:[A-Z][A-Z0-9_]*([,)])/\1/g; s/$/;/' >"$tmp/protos.h"
sed -E 's/^([^(]*[ *])MPI_/\1PMPI_/' "$tmp/protos.h" >>"$tmp/protos.h.pmpi"
mkdir "$tmp/full"
awk -v protos="$tmp/protos.h" -v pmpi="$tmp/protos.h.pmpi" '
    /@PROTOTYPES@/ { while ((getline l < protos) > 0) print l; while ((getline l < pmpi) > 0) print l; next }
    { gsub(/@VERSION@/, "0.0.0-check"); print }' "$here/mpi_base.h.in" >"$tmp/full/mpi.h"
MPICH_INCLUDE=$mpich_include python3 "$here/check_functions.py" --declarations "$here/functions.txt" \
    >"$tmp/mpich_decls.h"
{
    echo '#include <mpi.h>'
    echo '#ifdef __cplusplus'
    echo 'extern "C" {'
    echo '#endif'
    echo "#include \"$tmp/mpich_decls.h\""
    echo '#ifdef __cplusplus'
    echo '}'
    echo '#endif'
} >"$tmp/redeclare.c"
nprotos=$(grep -c . "$tmp/mpich_decls.h")
for header_dir in "$tmp/full" "$here/generated"; do
    [ -f "$header_dir/mpi.h" ] || continue
    label=$( [ "$header_dir" = "$tmp/full" ] && echo "functions.txt" || echo "generated/mpi.h")
    if $cc -std=c99 -Wall -Wextra -pedantic -Werror -I"$header_dir" -c "$tmp/redeclare.c" -o "$tmp/r.o" &&
        $cxx -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I"$header_dir" -c "$tmp/redeclare.c" -o "$tmp/r.o"; then
        echo "check_abi: $label: all $nprotos prototypes agree with MPICH's (C and C++)"
    else
        echo "check_abi: $label: prototypes conflict with MPICH's (compiler errors above)"
        status=1
    fi
done
exit $status
