#!/usr/bin/env bash
# The main job: builds and installs Reflex into install/, compiles examples/ring.c with Reflex's
# mpicc and runs it on 4 ranks with Reflex's mpiexec (ranks: ${RANKS:-4}).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh >/dev/null
mkdir -p build
install/bin/mpicc -O2 examples/ring.c -o build/ring
echo "\$ install/bin/mpiexec -n ${RANKS:-4} build/ring"
install/bin/mpiexec -n "${RANKS:-4}" build/ring
