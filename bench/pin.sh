#!/bin/sh
# pin.sh - run one MPI rank pinned to CPU (rank mod number of CPUs) with taskset, so that
# every implementation is pinned the same way whatever its launcher supports. The rank comes
# from the launcher's environment: PMI_RANK (Hydra, Reflex, Slurm PMI), OMPI_COMM_WORLD_RANK
# (Open MPI), PMIX_RANK or SLURM_PROCID; without one the rank runs unpinned, with a warning.
# Usage: mpiexec -n 2 bench/pin.sh ./program args...
rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-}}}}
if [ -z "$rank" ] || ! command -v taskset >/dev/null 2>&1; then
    echo "pin.sh: no rank in the environment (or no taskset); running unpinned" >&2
    exec "$@"
fi
ncpu=$(nproc --all 2>/dev/null || echo 1)
exec taskset -c $((rank % ncpu)) "$@"
