#!/usr/bin/env bash
# TCP point to point over loopback, without namespaces or daemons: Reflex with REFLEX_TCP_LOCAL=1
# against MPICH (UCX_TLS=tcp,self) and Open MPI (--mca btl self,tcp). Same program (bench/pt2pt.c,
# MPICH's build also run on Reflex's ABI-compatible libmpi), same pinning (bench/pin.sh),
# interleaved rounds, best of the rounds. Each run keeps the best of REPS short repetitions
# (-T 0.01), so that the quiet moments of a shared machine show through; as root the runs get
# `nice -n $NICE` (default -15), the same for every implementation. Ratios matter, not times.
#
# Extra Reflex cases compare settings in the same rounds: EXTRA="name:VAR=val,VAR=val ...";
# BEFORE=<install prefix of another Reflex build> adds that build as case reflex-before.
# MAX_SIZE (default 262144) bounds the message sizes (0, 1, 8, 64, ... 8x apart); the largest
# measured above 256 KiB gets latency and bandwidth columns of its own (e.g. EXTRA="s2:REFLEX_TCP_STREAMS=2" MAX_SIZE=4194304).
# Usage: MPI_LIB_DIR=install/lib tests/hosts/tcp-loopback.sh [BIN_DIR]   (ROUNDS=5, REPS=15)
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-15}
export MAX_SIZE=${MAX_SIZE:-262144}
: "${MPI_LIB_DIR:?set MPI_LIB_DIR to the directory of the Reflex libmpi.so.12}"
T=$(mktemp -d /tmp/reflex-tcpbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
NICE_CMD=()
[ "$(id -u)" = 0 ] && NICE_CMD=(nice -n "${NICE:--15}")
mpicc.mpich -O2 bench/pt2pt.c -o "$T/pt2pt.mpich" 2>/dev/null || { echo "needs mpicc.mpich"; exit 1; }
HAVE_OMPI=0
mpicc.openmpi -O2 bench/pt2pt.c -o "$T/pt2pt.ompi" 2>/dev/null && HAVE_OMPI=1
ARGS=(-q -t latency,bw -m "$MAX_SIZE" -T 0.01 -r "$REPS")
PIN=$PWD/bench/pin.sh

run_case() { # name command...
    local name=$1; shift
    timeout 300 "${NICE_CMD[@]}" "$@" >>"$T/raw.$name" 2>>"$T/err.$name" ||
        echo "  ($name failed: $(tail -1 "$T/err.$name"))" >&2
}

reflex() { # name lib_dir mpiexec [VAR=val ...]
    local name=$1 lib=$2 launcher=$3; shift 3
    run_case "$name" env "$@" LD_LIBRARY_PATH="$lib" "$launcher" -genv REFLEX_TCP_LOCAL 1 \
        -n 2 "$PIN" "$T/pt2pt.mpich" "${ARGS[@]}"
}

CASES=(reflex)
[ -n "${BEFORE:-}" ] && CASES+=(reflex-before)
for extra in ${EXTRA:-}; do CASES+=("${extra%%:*}"); done
CASES+=(mpich)
[ $HAVE_OMPI = 1 ] && CASES+=(openmpi)
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round of $ROUNDS" >&2
    reflex reflex "$MPI_LIB_DIR" "$BIN/mpiexec"
    [ -n "${BEFORE:-}" ] && reflex reflex-before "$BEFORE/lib" "$BEFORE/bin/mpiexec"
    for extra in ${EXTRA:-}; do
        vars=${extra#*:}
        reflex "${extra%%:*}" "$MPI_LIB_DIR" "$BIN/mpiexec" ${vars//,/ }
    done
    run_case mpich env UCX_TLS=tcp,self mpiexec.mpich -n 2 "$PIN" "$T/pt2pt.mpich" "${ARGS[@]}"
    [ $HAVE_OMPI = 1 ] && run_case openmpi mpirun.openmpi --allow-run-as-root --bind-to none \
        --mca btl self,tcp --mca btl_tcp_if_include lo -n 2 "$PIN" "$T/pt2pt.ompi" "${ARGS[@]}"
done

echo "### TCP over loopback (best of $ROUNDS rounds; latency one way in µs, bandwidth in MB/s)"
echo
python3 - "$T" "${CASES[@]}" <<'PY'
import os, sys
t, cases = sys.argv[1], sys.argv[2:]
best = {}
for case in cases:
    path = os.path.join(t, "raw." + case)
    for line in open(path) if os.path.exists(path) else []:
        f = line.split()
        if len(f) == 5 and f[0] in ("latency", "bw"):
            key, v = (case, f[0], int(f[1])), float(f[2])
            best[key] = min(best.get(key, v), v) if f[0] == "latency" else max(best.get(key, v), v)
cols = [("latency", 8), ("latency", 4096), ("latency", 32768), ("latency", 262144),
        ("bw", 32768), ("bw", 262144)]
big = max([s for (_, m, s) in best if m == "bw"], default=0)
if big > 262144:
    cols += [("latency", big), ("bw", big)]
print("| case | " + " | ".join(f"{m} {s} B" for m, s in cols) + " |")
print("|---|" + "---:|" * len(cols))
for case in cases:
    cells = [best.get((case, m, s)) for m, s in cols]
    print(f"| {case} | " + " | ".join("-" if c is None else f"{c:.2f}" if c < 100 else f"{c:.0f}"
                                      for c in cells) + " |")
PY
