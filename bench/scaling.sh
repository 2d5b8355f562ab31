#!/bin/sh
# scaling.sh - Reflex-only scaling runs for a larger machine (no MPICH/Open MPI needed there):
# the 2-rank point-to-point suite pinned to two cores, then the ring exchange at growing rank counts
# (up to 4x the cores, i.e. oversubscribed). Needs install/ and build/pt2pt, build/ring:
#   scripts/install.sh && install/bin/mpicc -O2 bench/pt2pt.c -o build/pt2pt \
#     && install/bin/mpicc -O2 examples/ring.c -o build/ring && sh bench/scaling.sh
export LD_LIBRARY_PATH="$PWD/install/lib"
cores=$(nproc)
echo "# cores: $cores"
echo "== 2 ranks, pinned to cores 2 and 3 =="
install/bin/mpiexec -n 2 sh -c 'exec taskset -c $((PMI_RANK + 2)) build/pt2pt -q' 2>&1 | grep -v '^#'
for n in 4 8 16 32 64; do
    echo "== ring exchange, $n ranks on $cores cores =="
    timeout 120 install/bin/mpiexec -n "$n" build/pt2pt -q -t ring 2>&1 | grep -v '^#'
done
echo "== demo, 16 ranks =="
timeout 60 install/bin/mpiexec -n 16 build/ring
