#!/usr/bin/env bash
# Builds Reflex (release) and installs it into PREFIX (default: <repo>/install):
#   bin/{mpicc,mpicxx,mpiexec,mpirun,reflex-info,reflex-sim}  include/mpi.h
#   lib/libmpi.so.12 (+ libmpi.so, libmpich.so.12, libmpich.so)  lib/pkgconfig/{mpi,mpich,reflex}.pc
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$repo/install}
target=${CARGO_TARGET_DIR:-$repo/target}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -1)

(cd "$repo" && cargo build --release -q -p reflex-mpi -p reflex-launch -p reflex-sim)

mkdir -p "$prefix"/{bin,include,lib/pkgconfig}
install -m 0755 "$target/release/libmpi.so" "$prefix/lib/libmpi.so.12.0.0"
for link in libmpi.so.12 libmpi.so libmpich.so.12 libmpich.so; do
    ln -sf libmpi.so.12.0.0 "$prefix/lib/$link"
done
install -m 0644 "$repo/crates/reflex-mpi/abi/generated/mpi.h" "$prefix/include/mpi.h"
for bin in mpiexec reflex-info reflex-sim; do
    install -m 0755 "$target/release/$bin" "$prefix/bin/$bin"
done
ln -sf mpiexec "$prefix/bin/mpirun"

wrapper() { # name envvar lang default
    sed -e "s/@NAME@/$1/g" -e "s/@ENVVAR@/$2/g" -e "s/@LANG@/$3/g" -e "s/@DEFAULT@/$4/g" \
        -e "s/@VERSION@/$version/g" "$repo/scripts/mpicc.in" >"$prefix/bin/$1"
    chmod 0755 "$prefix/bin/$1"
}
wrapper mpicc MPICH_CC CC cc
wrapper mpicxx MPICH_CXX CXX c++

for pc in mpi mpich reflex; do
    cat >"$prefix/lib/pkgconfig/$pc.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $pc
Description: Reflex MPI library (MPICH ABI, libmpi.so.12)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lmpi
PC
done
echo "installed Reflex $version into $prefix"
