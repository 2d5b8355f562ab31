#!/usr/bin/env bash
# mpi4py.futures across reflexd hosts in network namespaces: an MPIPoolExecutor of 3 workers
# started by MPI_Comm_spawn from a parent on host 1 (one slot per host), so the workers take
# hosts 2 and 3's free slots and the third is dealt to host 1 again (docs/spawn.md). Checks the
# results and that the workers ran on all three hosts. Needs the venv of tests/mpi4py/run.sh
# (skipped without it, or without root or `ip netns`).
#
# Usage: MPI_LIB_DIR=install/lib tests/hosts/mpi4py.sh [BIN_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release}
PYTHON=${MPI4PY_WORK:-build/mpi4py}/venv/bin/python
: "${MPI_LIB_DIR:?set MPI_LIB_DIR to the directory of the Reflex libmpi.so.12}"
if ! LD_LIBRARY_PATH="$MPI_LIB_DIR" "$PYTHON" -c 'import mpi4py.futures' 2>/dev/null; then
    echo "tests/hosts/mpi4py.sh: skipped: no mpi4py venv at $PYTHON (tests/mpi4py/run.sh builds it)"
    exit 0
fi
PYTHON=$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")  # absolute, not resolved: the venv is the link
source tests/hosts/lib.sh
out=$(LD_LIBRARY_PATH=$(realpath "$MPI_LIB_DIR") timeout 120 "$BIN/mpiexec" -certs "$T/root" \
    -hosts "$(hosts 3 1)" -n 1 "$PYTHON" tests/hosts/futures.py 2>&1)
rc=$?
want_hosts="hosts $NET.1 $NET.2 $NET.3"
if [ $rc = 0 ] && grep -qx "sum 8555" <<<"$out" && grep -qx "$want_hosts" <<<"$out"; then
    echo "PASS  mpi4py.futures: 3 spawned workers on 3 hosts"
else
    echo "FAIL  mpi4py.futures (exit $rc; want 'sum 8555' and '$want_hosts')"
    sed 's/^/     | /' <<<"$out" | head -30
    exit 1
fi
