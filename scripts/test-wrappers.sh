#!/bin/sh
# test-wrappers.sh -- test scripts/install.sh and the mpicc/mpicxx wrappers.
#
# Runs install.sh --no-build on a fake build (a stub libmpi.so with the
# right soname, stub programs), checks the installed layout, then swaps in
# MPICH's header and library (when installed) so that the wrappers really
# compile and link MPI programs.  Everything lives in a temporary directory
# that is removed at the end.
#
# Usage: scripts/test-wrappers.sh            exit 0 when every check passes
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/reflex-test-wrappers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
cc=${CC:-cc}
mpich_include=${MPICH_INCLUDE:-/usr/include/x86_64-linux-gnu/mpich}
mpich_lib=${MPICH_LIB:-/usr/lib/x86_64-linux-gnu/libmpich.so.12}

failures=0
passes=0
ok() {
    passes=$((passes + 1))
}
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
# expect DESCRIPTION COMMAND... : the command must succeed
expect() {
    what=$1
    shift
    if "$@" >"$tmp/out" 2>&1; then ok; else fail "$what"; sed 's/^/  | /' "$tmp/out"; fi
}
# contains DESCRIPTION TEXT WORD : TEXT must contain WORD
contains() {
    case $2 in *"$3"*) ok ;; *) fail "$1: '$3' not in: $2" ;; esac
}
lacks() {
    case $2 in *"$3"*) fail "$1: '$3' unexpectedly in: $2" ;; *) ok ;; esac
}

# --- a fake build tree for install.sh ---------------------------------------
fake=$tmp/target/release
mkdir -p "$fake"
echo 'int reflex_stub(void) { return 0; }' >"$tmp/stub.c"
$cc -shared -fPIC -Wl,-soname,libmpi.so.12 "$tmp/stub.c" -o "$fake/libmpi.so"
for prog in mpiexec reflex-info; do
    printf '#!/bin/sh\necho %s stub\n' "$prog" >"$fake/$prog"
    chmod +x "$fake/$prog"
done
header=$repo/crates/reflex-mpi/abi/generated/mpi.h
if [ ! -f "$header" ]; then
    echo "test-wrappers: $header not generated yet (run the ABI generator); skipped" >&2
    exit 77
fi

# --- install.sh ----------------------------------------------------------------
prefix=$tmp/prefix
expect "install.sh --no-build" env CARGO_TARGET_DIR="$tmp/target" "$repo/scripts/install.sh" --no-build "$prefix"
for path in lib/libmpi.so.12.0.0 include/mpi.h include/mpio.h bin/mpicc bin/mpicxx bin/mpiexec \
    bin/reflex-info lib/pkgconfig/mpi.pc lib/pkgconfig/mpich.pc lib/pkgconfig/reflex.pc; do
    [ -f "$prefix/$path" ] && ok || fail "install.sh did not install $path"
done
for link in lib/libmpi.so.12 lib/libmpi.so lib/libmpich.so.12 lib/libmpich.so; do
    [ "$(readlink "$prefix/$link")" = libmpi.so.12.0.0 ] && ok || fail "$link is not a link to libmpi.so.12.0.0"
done
[ "$(readlink "$prefix/bin/mpirun")" = mpiexec ] && ok || fail "bin/mpirun is not a link to mpiexec"
soname=$(readelf -d "$prefix/lib/libmpi.so.12.0.0" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = libmpi.so.12 ] && ok || fail "installed library has soname '$soname'"
cmp -s "$header" "$prefix/include/mpi.h" && ok || fail "include/mpi.h differs from the generated header"
grep -q "$prefix" "$prefix/bin/mpicc" "$prefix/lib/pkgconfig/mpi.pc" &&
    fail "the installation records its own path (not relocatable)" || ok

# A library without MPICH's soname must be refused.
$cc -shared -fPIC -Wl,-soname,libwrong.so "$tmp/stub.c" -o "$tmp/target/release/libmpi.so"
if env CARGO_TARGET_DIR="$tmp/target" "$repo/scripts/install.sh" --no-build "$tmp/prefix2" >"$tmp/out" 2>&1; then
    fail "install.sh accepted a library whose soname is libwrong.so"
else
    contains "install.sh soname error" "$(cat "$tmp/out")" "expected libmpi.so.12"
fi
# A missing artefact is reported by name.
rm -f "$tmp/target/release/mpiexec"
if env CARGO_TARGET_DIR="$tmp/target" "$repo/scripts/install.sh" --no-build "$tmp/prefix2" >"$tmp/out" 2>&1; then
    fail "install.sh succeeded without mpiexec"
else
    contains "install.sh missing-file error" "$(cat "$tmp/out")" "release/mpiexec"
fi

# --- wrapper flags (-show and friends) -------------------------------------------------
mpicc=$prefix/bin/mpicc
mpicxx=$prefix/bin/mpicxx
unset MPICH_CC MPICH_CXX REFLEX_CC REFLEX_CXX 2>/dev/null || true
out=$("$mpicc" -show x.c -o x)
contains "mpicc -show" "$out" "cc -I$prefix/include x.c -o x -L$prefix/lib -Wl,-rpath,$prefix/lib -lmpi"
contains "mpicxx -show" "$("$mpicxx" -show x.cc)" "c++ -I$prefix/include x.cc"
for flag in -c -E -S -M -MM; do
    out=$("$mpicc" -show "$flag" x.c)
    contains "mpicc -show $flag" "$out" "-I$prefix/include"
    lacks "mpicc -show $flag" "$out" "-lmpi"
done
for flag in -compile-info -compile_info; do
    out=$("$mpicc" "$flag")
    contains "mpicc $flag" "$out" "-I$prefix/include"
    lacks "mpicc $flag" "$out" "-lmpi"
done
for flag in -link-info -link_info; do
    contains "mpicc $flag" "$("$mpicc" "$flag")" "-lmpi"
done
contains "mpicc -cc=" "$("$mpicc" -cc=gcc-12 -show x.c)" "gcc-12 -I"
contains "mpicxx -cxx=" "$("$mpicxx" -cxx=g++-12 -show x.cc)" "g++-12 -I"
contains "REFLEX_CC" "$(REFLEX_CC=clang "$mpicc" -show x.c)" "clang -I"
contains "MPICH_CC wins over REFLEX_CC" "$(MPICH_CC=gcc REFLEX_CC=clang "$mpicc" -show x.c)" "gcc -I"
contains "compiler with options" "$(MPICH_CC='gcc -m64' "$mpicc" -show x.c)" "gcc -m64 -I"
contains "REFLEX_CXX" "$(REFLEX_CXX=clang++ "$mpicxx" -show x.cc)" "clang++ -I"
contains "quoting in -show" "$("$mpicc" -show '-DMSG=a b' x.c)" "'-DMSG=a b'"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
out=$("$mpicc" -v 2>&1)
contains "mpicc -v" "$out" "mpicc for Reflex $version"
contains "mpicc -v runs the compiler" "$out" "version"

# Relocation: move the installation, and call it through a symbolic link.
mv "$prefix" "$tmp/moved"
prefix=$tmp/moved
mpicc=$prefix/bin/mpicc
mpicxx=$prefix/bin/mpicxx
contains "moved installation" "$("$mpicc" -show x.c)" "-I$prefix/include"
mkdir -p "$tmp/elsewhere"
ln -s "$mpicc" "$tmp/elsewhere/mpicc"
contains "wrapper called through a link" "$("$tmp/elsewhere/mpicc" -show x.c)" "-L$prefix/lib"

if command -v pkg-config >/dev/null 2>&1; then
    for pc in mpi mpich reflex; do
        out=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs "$pc")
        contains "pkg-config $pc" "$out" "-lmpi"
        contains "pkg-config $pc" "$out" "moved/lib/pkgconfig/../../include"
    done
    [ "$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --modversion mpi)" = "$version" ] && ok ||
        fail "pkg-config --modversion mpi is not $version"
else
    echo "test-wrappers: pkg-config not installed; .pc files not checked" >&2
fi

# --- real compile and link, with MPICH's header and library as the fake ---
if [ -f "$mpich_include/mpi.h" ] && [ -f "$mpich_lib" ]; then
    cp "$mpich_include"/mpi.h "$mpich_include"/mpi_proto.h "$mpich_include"/mpio.h "$prefix/include/"
    ln -sfn "$mpich_lib" "$prefix/lib/libmpi.so.12.0.0"
    cat >"$tmp/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("%s %d\n", GREETING, rank);
    return MPI_Finalize();
}
EOF
    cp "$tmp/hello.c" "$tmp/hello.cc"
    expect "mpicc compiles and links" "$mpicc" -O1 '-DGREETING="hello world"' "$tmp/hello.c" -o "$tmp/hello"
    expect "mpicc -c, then link" sh -c "'$mpicc' -c '-DGREETING=\"hi\"' '$tmp/hello.c' -o '$tmp/hello.o' && '$mpicc' '$tmp/hello.o' -o '$tmp/hello2'"
    expect "mpicxx compiles and links" "$mpicxx" -DMPICH_SKIP_MPICXX '-DGREETING="hello"' "$tmp/hello.cc" -o "$tmp/hello_cxx"
    for bin in hello hello2 hello_cxx; do
        [ -x "$tmp/$bin" ] || continue
        dyn=$(readelf -d "$tmp/$bin" | grep -E 'NEEDED|RPATH|RUNPATH')
        contains "$bin links libmpi" "$dyn" "libmpich.so.12"
        contains "$bin has the rpath" "$dyn" "$prefix/lib"
    done
    expect "mpicc -E" "$mpicc" -E '-DGREETING="x"' "$tmp/hello.c" -o "$tmp/hello.i"
else
    echo "test-wrappers: MPICH not installed; compile and link not checked" >&2
fi

echo "test-wrappers: $passes checks passed, $failures failed"
[ "$failures" -eq 0 ]
