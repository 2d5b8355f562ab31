#!/usr/bin/env bash
# Runs the C MPI test suite (tests/mpi/run.py) with every job spread over emulated hosts:
# `mpiexec -hosts h1:2,h2:2` through reflexd in network namespaces, so ranks 0-1 and 2-3 share
# memory and the two pairs talk TCP. Extra arguments go to run.py (e.g. --ranks 2,4 --filter ...).
#
# Usage: sudo MPI_LIB_DIR=install/lib tests/hosts/suite.sh BIN_DIR [run.py options]
#   Programs are built with mpicc.mpich (Reflex's libmpi is ABI compatible) and run with
#   LD_LIBRARY_PATH=$MPI_LIB_DIR, which mpiexec passes on to the ranks.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:?usage: suite.sh BIN_DIR [run.py options]}
shift
: "${MPI_LIB_DIR:?set MPI_LIB_DIR to the directory of the Reflex libmpi.so.12 and libmpich.so.12}"
source tests/hosts/lib.sh
LD_LIBRARY_PATH="$MPI_LIB_DIR" python3 tests/mpi/run.py --impl other --mpicc mpicc.mpich \
    --mpiexec "$BIN/mpiexec -certs $T/root -hosts $(hosts 2 2) -n" \
    --build-dir "$T/build" "$@"
