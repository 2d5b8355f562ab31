#!/usr/bin/env bash
# Builds Reflex and runs every test: Rust unit and integration tests, the ring model check (loom),
# the ABI checks against MPICH's header, and the C MPI test suite under Reflex's mpiexec with
# 1, 2, 3, 4 and 8 ranks (8 is oversubscribed on 2 cores). Prints one summary line per stage.
set -euo pipefail
cd "$(dirname "$0")/.."

stage() { printf '\n== %s ==\n' "$*"; }

stage "build and install into install/"
scripts/install.sh

stage "generated ABI files are up to date"
cargo run -q --release -p reflex-abigen -- --check

stage "ABI: constants, layouts and prototypes identical to MPICH's mpi.h; every symbol exported"
bash crates/reflex-mpi/abi/check_abi.sh
bash crates/reflex-mpi/abi/check_exports.sh install/lib/libmpi.so.12

stage "compiler wrappers and install layout"
bash scripts/test-wrappers.sh

stage "rust tests"
mkdir -p build
if ! cargo test --workspace --release >build/cargo-test.log 2>&1; then
    grep -E '^test result|FAILED|panicked|^error' build/cargo-test.log | head -40
    echo "rust tests failed (full log: build/cargo-test.log)"
    exit 1
fi
grep -E '^test result' build/cargo-test.log | awk '{p+=$4; f+=$6} END {print "rust: " p " passed, " f " failed"}'

stage "fuzzing: libFuzzer on the TCP wire formats and the launcher protocol, 30 s each (skipped without nightly Rust and cargo-fuzz; the rust tests ran 100k mutants of each already)"
tests/fuzz/run.sh 30

stage "loom model check of the shared-memory ring"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -q -p reflex-shm --release --lib loom

stage "C MPI test suite"
python3 tests/mpi/run.py --ranks 1,2,3,4,8

stage "BSPlib (libbsp.so on Reflex's one-sided communication): programs and debug-mode checks, 1-4 ranks"
python3 tests/bsp/run.py

stage "multi-host: reflexd in network namespaces (skipped without root or ip netns)"
cargo build --release -q -p reflexd -p reflex-launch
MPI_LIB_DIR=install/lib tests/hosts/run.sh target/release
tests/hosts/discovery.sh target/release

stage "foreign launchers: srun --mpi=pmi2|pmix on a local Slurm (1 and 2 emulated nodes), Open MPI mpirun (skipped without root or Slurm)"
tests/launchers/run.sh install

stage "C MPI suite on two emulated nodes under Hydra (shared memory inside, TCP between)"
MPI_LIB_DIR=install/lib tests/hosts/suite.sh hydra target/release --ranks 2,4

stage "C MPI suite across two reflexd hosts in network namespaces, 2 ranks each (skipped without root)"
MPI_LIB_DIR=install/lib tests/hosts/suite.sh reflexd target/release --ranks 4

stage "dynamic processes across reflexd hosts: spawned jobs on the other host's free slots, ports, join (skipped without root)"
MPI_LIB_DIR=install/lib tests/hosts/suite.sh reflexd target/release --ranks 1,2,3 --filter '^dynproc_'

stage "a connection between two live ranks breaks (ss -K): the job ends with the reason, not a hang (skipped without root)"
tests/hosts/link-failure.sh install

stage "C MPI suite with TCP between every pair of ranks"
MPI_LIB_DIR=install/lib tests/hosts/suite.sh tcp target/release --ranks 2,4

stage "C MPI suite over TCP with 4 sockets per pair of ranks (REFLEX_TCP_STREAMS=4, large packets striped): point to point, datatypes, collectives, RMA subset"
REFLEX_TCP_STREAMS=4 MPI_LIB_DIR=install/lib tests/hosts/suite.sh tcp target/release --ranks 2,4 \
    --filter '^(bigmsg|sizes|dt_p2p|coll|coll_v|order|wildcard|manyreq|sendrecv|isendrecv|probe|mt_pairs|rma_fence)/'

stage "build systems: CMake find_package(MPI), pkg-config Makefile, Meson against install/"
tests/buildsys/run.sh install

stage "unmodified programs built for MPICH: a Fortran program (mpif90.mpich, MPICH's libmpichfort on Reflex), Debian's ScaLAPACK/PBLAS/BLACS test suite and NetPIPE"
tests/apps/run.sh install

stage "MPICH 4.0.2's own test suite (test/mpi) built with install/bin/mpicc, run under Reflex's mpiexec (tests/mpich-suite/expected-failures.txt)"
tests/mpich-suite/run.sh install

stage "mpi4py built against install/, its test suite with 1, 2, 3 ranks (tests/mpi4py/expected-failures.txt)"
tests/mpi4py/run.sh --budget 2400

stage "mpi4py.futures across reflexd hosts: an MPIPoolExecutor's spawned workers on 3 namespace hosts (skipped without root)"
MPI_LIB_DIR=install/lib tests/hosts/mpi4py.sh target/release
