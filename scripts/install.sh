#!/bin/sh
# install.sh -- build Reflex (release) and install it under PREFIX.
#
# Usage: scripts/install.sh [--no-build] [PREFIX]      (PREFIX: <repo>/install)
#   --no-build   install what target/release already holds (no cargo)
# Honours CARGO_TARGET_DIR.  The result may be moved elsewhere afterwards:
# nothing in it records PREFIX (the wrappers and .pc files find their own
# location).
#
# Layout:
#   lib/libmpi.so.12.0.0          the library (soname libmpi.so.12)
#   lib/libmpi.so.12, libmpi.so   links to it, and libmpich.so.12, libmpich.so
#                                 so that binaries linked against MPICH load it
#   lib/pkgconfig/mpi.pc          pkg-config (aliases mpich.pc, reflex.pc)
#   include/mpi.h, mpio.h         the generated header (MPICH ABI)
#   bin/mpicc, bin/mpicxx         compiler wrappers (from scripts/mpicc.in)
#   bin/mpiexec (+ mpirun), bin/reflex-info, bin/reflex-sim (when built)
#   lib/libbsp.so, include/bsp.h, bin/bspprobe   BSPlib (crates/reflex-bsp), when built
set -eu

die() {
    echo "install.sh: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "$0")/.." && pwd)
build=yes
prefix=
for arg in "$@"; do
    case $arg in
    --no-build) build=no ;;
    -h | --help)
        sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    -*) die "unknown option $arg (see --help)" ;;
    *)
        [ -z "$prefix" ] || die "more than one PREFIX given ($prefix, $arg)"
        prefix=$arg
        ;;
    esac
done
prefix=${prefix:-$repo/install}

# Relative CARGO_TARGET_DIR and PREFIX are relative to the caller's directory.
target=${CARGO_TARGET_DIR:-$repo/target}
case $target in /*) ;; *) target=$(pwd)/$target ;; esac
mkdir -p "$prefix" || die "cannot create $prefix"
prefix=$(cd "$prefix" && pwd)

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
[ -n "$version" ] || die "no version found in $repo/Cargo.toml"

if [ "$build" = yes ]; then
    packages="-p reflex-mpi -p reflex-launch"
    [ -d "$repo/crates/reflex-sim" ] && packages="$packages -p reflex-sim"
    [ -d "$repo/crates/reflex-bsp" ] && packages="$packages -p reflex-bsp"
    # shellcheck disable=SC2086
    (cd "$repo" && CARGO_TARGET_DIR=$target cargo build --release $packages) ||
        die "cargo build failed"
fi

release=$target/release
header=$repo/crates/reflex-mpi/abi/generated/mpi.h
for file in "$release/libmpi.so" "$release/mpiexec" "$release/reflex-info" "$header"; do
    [ -f "$file" ] || die "missing $file (has the build run? is CARGO_TARGET_DIR right?)"
done

# The soname is what binaries record; it must be MPICH's.
if command -v readelf >/dev/null 2>&1; then
    soname=$(readelf -d "$release/libmpi.so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    [ "$soname" = libmpi.so.12 ] ||
        die "$release/libmpi.so has soname '${soname:-none}', expected libmpi.so.12"
else
    echo "install.sh: readelf not found; soname not verified" >&2
fi

mkdir -p "$prefix/bin" "$prefix/include" "$prefix/lib/pkgconfig"

install -m 0755 "$release/libmpi.so" "$prefix/lib/libmpi.so.12.0.0"
for link in libmpi.so.12 libmpi.so libmpich.so.12 libmpich.so; do
    ln -sfn libmpi.so.12.0.0 "$prefix/lib/$link"
done

install -m 0644 "$header" "$prefix/include/mpi.h"
install -m 0644 "$repo/crates/reflex-mpi/abi/mpio.h" "$prefix/include/mpio.h"

install -m 0755 "$release/mpiexec" "$prefix/bin/mpiexec"
ln -sfn mpiexec "$prefix/bin/mpirun"
install -m 0755 "$release/reflex-info" "$prefix/bin/reflex-info"
if [ -f "$release/reflex-sim" ]; then
    install -m 0755 "$release/reflex-sim" "$prefix/bin/reflex-sim"
fi

# wrapper NAME ENVVAR LANG DEFAULT LANG_NAME
wrapper() {
    sed -e "s/@NAME@/$1/g" -e "s/@ENVVAR@/$2/g" -e "s/@LANG@/$3/g" \
        -e "s/@DEFAULT@/$4/g" -e "s/@LANG_NAME@/$5/g" -e "s/@VERSION@/$version/g" \
        "$repo/scripts/mpicc.in" >"$prefix/bin/$1.tmp"
    chmod 0755 "$prefix/bin/$1.tmp"
    mv -f "$prefix/bin/$1.tmp" "$prefix/bin/$1"
}
wrapper mpicc MPICH_CC CC cc C
wrapper mpicxx MPICH_CXX CXX c++ C++

for name in mpi mpich reflex; do
    sed -e "s/@PCNAME@/$name/g" -e "s/@VERSION@/$version/g" "$repo/scripts/mpi.pc.in" \
        >"$prefix/lib/pkgconfig/$name.pc"
done

# BSPlib: the library, its header, and the probe built with the wrapper just installed.
if [ -f "$release/libbsp.so" ]; then
    install -m 0755 "$release/libbsp.so" "$prefix/lib/libbsp.so"
    install -m 0644 "$repo/crates/reflex-bsp/include/bsp.h" "$prefix/include/bsp.h"
    "$prefix/bin/mpicc" -O2 "$repo/crates/reflex-bsp/probe/bspprobe.c" -o "$prefix/bin/bspprobe" -lbsp ||
        die "cannot build bspprobe"
fi

echo "installed Reflex $version into $prefix"
