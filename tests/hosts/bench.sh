#!/usr/bin/env bash
# Benchmarks of the multi-host path: TCP latency and bandwidth (Reflex over loopback and
# between two network namespaces, against MPICH's and Open MPI's TCP transports over
# loopback), and start-up + cleanup times of `mpiexec -hosts` on 1, 2 and 4 emulated hosts
# (the REXEC paper's experiment, seed000a.md §1.4: 158 ms + 42.8 ms per node in 2000).
#
# Every implementation runs the same program (bench/pt2pt.c, OSU style; MPICH's build is also
# run on Reflex's libmpi, which is ABI compatible) with the same pinning (bench/pin.sh), in
# interleaved rounds, best of the rounds; ratios matter, not absolute times (shared machine).
#
# Usage: sudo MPI_LIB_DIR=install/lib tests/hosts/bench.sh [BIN_DIR]   (ROUNDS=3, STARTS=10)
#        sudo ONLY_STARTUP=1 tests/hosts/bench.sh [BIN_DIR]   (start-up times only, no MPI)
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release}
ROUNDS=${ROUNDS:-3}
STARTS=${STARTS:-10}
ONLY_STARTUP=${ONLY_STARTUP:-0}
[ "$ONLY_STARTUP" = 1 ] || : "${MPI_LIB_DIR:?set MPI_LIB_DIR to the directory of the Reflex libmpi.so.12 and libmpich.so.12}"
source tests/hosts/lib.sh
if [ "$ONLY_STARTUP" != 1 ]; then

mpicc.mpich -O2 bench/pt2pt.c -o "$T/pt2pt.mpich" 2>/dev/null || { echo "needs mpicc.mpich"; exit 1; }
HAVE_OMPI=0
mpicc.openmpi -O2 bench/pt2pt.c -o "$T/pt2pt.ompi" 2>/dev/null && HAVE_OMPI=1
ARGS=(-q -t latency,bw -m 1048576)
PIN=$PWD/bench/pin.sh

run_case() { # name command...
    local name=$1; shift
    echo "  $name" >&2
    timeout 300 "$@" >>"$T/raw.$name" 2>>"$T/err.$name" || echo "    ($name failed: $(tail -1 "$T/err.$name"))" >&2
}

echo "point to point (${ROUNDS} interleaved rounds)" >&2
for round in $(seq 1 "$ROUNDS"); do
    echo " round $round" >&2
    run_case reflex-shm env LD_LIBRARY_PATH="$MPI_LIB_DIR" "$BIN/mpiexec" -n 2 "$PIN" "$T/pt2pt.mpich" "${ARGS[@]}"
    run_case reflex-tcp-lo env LD_LIBRARY_PATH="$MPI_LIB_DIR" "$BIN/mpiexec" -genv REFLEX_TCP_LOCAL 1 -n 2 "$PIN" "$T/pt2pt.mpich" "${ARGS[@]}"
    run_case reflex-tcp-netns env LD_LIBRARY_PATH="$MPI_LIB_DIR" "$BIN/mpiexec" -certs "$T/root" -hosts "$(hosts 2)" -n 2 "$PIN" "$T/pt2pt.mpich" "${ARGS[@]}"
    run_case mpich-tcp-lo env UCX_TLS=tcp,self mpiexec.mpich -n 2 "$PIN" "$T/pt2pt.mpich" "${ARGS[@]}"
    [ $HAVE_OMPI = 1 ] && run_case openmpi-tcp-lo mpirun.openmpi --allow-run-as-root --bind-to none \
        --mca btl self,tcp --mca btl_tcp_if_include lo -n 2 "$PIN" "$T/pt2pt.ompi" "${ARGS[@]}"
done

echo
echo "### TCP point to point (best of $ROUNDS rounds; latency one way in µs, bandwidth in MB/s)"
echo
python3 - "$T" <<'PY'
import glob, os, sys
t = sys.argv[1]
cases = ["reflex-shm", "reflex-tcp-lo", "reflex-tcp-netns", "mpich-tcp-lo", "openmpi-tcp-lo"]
best = {}
for case in cases:
    for line in open(os.path.join(t, "raw." + case)) if os.path.exists(os.path.join(t, "raw." + case)) else []:
        f = line.split()
        if len(f) == 5 and f[0] in ("latency", "bw"):
            key, v = (case, f[0], int(f[1])), float(f[2])
            best[key] = min(best.get(key, v), v) if f[0] == "latency" else max(best.get(key, v), v)
cols = [("latency", 8), ("latency", 4096), ("latency", 32768), ("bw", 32768), ("bw", 262144)]
print("| case | " + " | ".join(f"{m} {s} B" for m, s in cols) + " |")
print("|---|" + "---:|" * len(cols))
for case in cases:
    cells = [best.get((case, m, s)) for m, s in cols]
    print(f"| {case} | " + " | ".join("-" if c is None else f"{c:.2f}" if c < 100 else f"{c:.0f}" for c in cells) + " |")
PY
fi

ms_now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "### start-up + cleanup of a null job (median of $STARTS, ms)"
echo
echo "| launcher | hosts | ranks | ms |"
echo "|---|---:|---:|---:|"
time_runs() { # label hosts ranks command...   (also appends "hosts ms" to $T/medians)
    local label=$1 nh=$2 nr=$3; shift 3
    local i t0 m
    m=$(for i in $(seq 1 "$STARTS"); do
        t0=$(ms_now); "$@" >/dev/null 2>&1; echo $(( ($(ms_now) - t0) / 1000 ))
    done | median)
    [ "$label" = "mpiexec -hosts (reflexd, TLS)" ] && [ "$nh" = "$nr" ] && echo "$nh $m" >>"$T/medians"
    awk -v l="$label" -v h="$nh" -v r="$nr" -v m="$m" 'BEGIN {printf "| %s | %s | %s | %.1f |\n", l, h, r, m / 1000}'
}
time_runs "mpiexec (one host, fork)" 1 1 "$BIN/mpiexec" -n 1 true
time_runs "mpiexec.hydra (one host, fork)" 1 1 mpiexec.hydra -n 1 true
time_runs "mpirun, Open MPI 4.1 (one host, fork)" 1 1 mpirun.openmpi --allow-run-as-root -n 1 true
for n in 1 2 4; do
    time_runs "mpiexec -hosts (reflexd, TLS)" "$n" "$n" "$BIN/mpiexec" -certs "$T/root" -hosts "$(hosts "$n")" -n "$n" true
done
time_runs "mpiexec -hosts (reflexd, TLS)" 4 8 "$BIN/mpiexec" -certs "$T/root" -hosts "$(hosts 4 2)" -n 8 true
# Per-host cost: least-squares slope of the median over 1, 2 and 4 hosts (one rank each).
awk '{n++; x+=$1; y+=$2; xx+=$1*$1; xy+=$1*$2} END {if (n > 1) printf "\nper-host cost (slope over 1, 2, 4 hosts): %.1f ms (target: at most 5 ms)\n", (n*xy - x*y) / (n*xx - x*x) / 1000}' "$T/medians"
echo
echo "(mpiexec -n 2/8 of an MPI hello against mpiexec.hydra and Open MPI's mpirun: python3 bench/startup.py)"
