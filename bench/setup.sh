#!/bin/sh
# setup.sh - install the peer MPI implementations that bench/compare.py (and tests/mpi/run.py)
# compare Reflex with: MPICH and Open MPI from Debian/Ubuntu packages. Does nothing when they are
# already there. Needs root (or sudo) and apt-get.
set -eu
need=""
command -v mpicc.mpich >/dev/null 2>&1 && command -v mpiexec.mpich >/dev/null 2>&1 || need="$need mpich libmpich-dev"
command -v mpicc.openmpi >/dev/null 2>&1 && command -v mpirun.openmpi >/dev/null 2>&1 || need="$need openmpi-bin libopenmpi-dev"
if [ -z "$need" ]; then
    echo "setup.sh: MPICH and Open MPI are already installed"
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup.sh: installing$need"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $need
