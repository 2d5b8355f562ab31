#!/usr/bin/env bash
# Runs the C MPI test suite (tests/mpi/run.py) over the TCP transport, in one of three ways:
#   reflexd  every job launched by `mpiexec -hosts h1:2,h2:2` through reflexd in two network
#            namespaces (needs root): ranks 0-1 and 2-3 share memory, the pairs talk TCP;
#   hydra    every job launched by `mpiexec.hydra -launcher fork -hosts 127.0.0.1:2,localhost:2`:
#            two emulated nodes on this machine (PMI_process_mapping says so), same split;
#   tcp      Reflex's single-host mpiexec with REFLEX_TCP_LOCAL=1: every pair talks TCP.
# Programs are built with mpicc.mpich (Reflex's libmpi is ABI compatible) and run with
# LD_LIBRARY_PATH=$MPI_LIB_DIR. Extra arguments go to run.py (e.g. --ranks 2,4 --filter ...).
#
# Usage: MPI_LIB_DIR=install/lib tests/hosts/suite.sh reflexd|hydra|tcp BIN_DIR [run.py options]
set -uo pipefail
cd "$(dirname "$0")/../.."
MODE=${1:?usage: suite.sh reflexd|hydra|tcp BIN_DIR [run.py options]}
BIN=${2:?usage: suite.sh reflexd|hydra|tcp BIN_DIR [run.py options]}
shift 2
: "${MPI_LIB_DIR:?set MPI_LIB_DIR to the directory of the Reflex libmpi.so.12 and libmpich.so.12}"
BUILD=$(mktemp -d /tmp/reflex-suite.XXXXXX)
case "$MODE" in
reflexd)
    source tests/hosts/lib.sh
    LAUNCH="$BIN/mpiexec -certs $T/root -hosts $(hosts 2 2) -n" ;;
hydra)
    LAUNCH="mpiexec.hydra -launcher fork -hosts 127.0.0.1:2,localhost:2 -n" ;;
tcp)
    LAUNCH="$BIN/mpiexec -genv REFLEX_TCP_LOCAL 1 -n" ;;
*)
    echo "suite.sh: unknown mode $MODE"; exit 2 ;;
esac
LD_LIBRARY_PATH="$MPI_LIB_DIR" python3 tests/mpi/run.py --impl other --mpicc mpicc.mpich \
    --mpiexec "$LAUNCH" --build-dir "$BUILD" "$@"
status=$?
rm -rf "$BUILD"
exit $status
