#!/usr/bin/env bash
# Reflex programs under foreign launchers: Slurm's srun (--mpi=pmi2 and --mpi=pmix, on one and on
# two emulated nodes of a local Slurm that this script starts) and Open MPI's mpirun (PMIx only).
#
# Builds examples/ring.c, tests/mpi/{sendrecv,coll,order,abort,kill_rank}.c and
# tests/launchers/{layout,exit_rank}.c with PREFIX/bin/mpicc, starts munged + slurmctld + 2 slurmd
# (tests/launchers/cluster.sh), and checks exit codes and output: every job must say it ran on
# Reflex and pass its own checks; layout.c shows that ranks of one emulated node share a
# segment named by node index (0:0 1:0 2:1 3:1) while the ring crosses nodes over TCP; a rank
# that calls MPI_Abort, is killed, or exits non-zero ends the job non-zero with no process and no
# /dev/shm file of the job left. At the end no daemon, step or rank may remain. Everything it
# made is removed (trap). The whole run takes about 40 s.
# Prints "skipped: <reason>" and exits 0 when not root or Slurm is not installed.
#
# Usage: tests/launchers/run.sh [PREFIX]     (PREFIX: the Reflex install, default install/)
#        LAUNCHERS_SLURM_PORT=16817 (slurmctld port; the slurmd daemons take the next ones)
set -uo pipefail
cd "$(dirname "$0")/../.."
skip() {
    echo "skipped: $*"
    exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (starts munged, slurmctld and slurmd)"
for cmd in slurmctld slurmd srun sinfo munged munge unshare; do
    command -v "$cmd" >/dev/null ||
        skip "Slurm is not installed ($cmd not found; apt-get install slurm-wlm slurmctld slurmd slurm-client munge)"
done
PREFIX=$(realpath "${1:-install}")
[ -x "$PREFIX/bin/mpicc" ] || {
    echo "launchers: $PREFIX/bin/mpicc not found: run scripts/install.sh first"
    exit 1
}
D=$(mktemp -d /tmp/reflex-launchers.XXXXXX)
PASS=0
FAIL=0
JOB_TIMEOUT=90
source tests/launchers/cluster.sh
trap 'cluster_stop; rm -rf "$D"' EXIT
trap 'exit 130' INT TERM

ok() {
    PASS=$((PASS + 1))
    printf 'PASS  %s\n' "$1"
}
bad() {
    FAIL=$((FAIL + 1))
    printf 'FAIL  %s\n' "$1"
}

# check NAME WANT REGEX... -- command...
# WANT: an exit code; "nonzero"; or "pass": exit 0 and exactly one " No Errors" line (rank 0's:
# ranks that fell back to singletons would each print one). Every REGEX (grep -Ei) must match
# a line of the output. A job still running after JOB_TIMEOUT seconds is killed and fails.
check() {
    local name=$1 want=$2 out rc re regexes=() t0 why=
    shift 2
    while [ "$1" != -- ]; do
        regexes+=("$1")
        shift
    done
    shift
    t0=$SECONDS
    out=$(timeout -k 5 "$JOB_TIMEOUT" "$@" 2>&1)
    rc=$?
    if [ $((SECONDS - t0)) -ge "$JOB_TIMEOUT" ]; then
        why="timed out after $JOB_TIMEOUT s"
    elif [ "$want" = nonzero ]; then
        [ "$rc" != 0 ] || why="exit 0, want non-zero"
    elif [ "$want" = pass ]; then
        [ "$rc" = 0 ] && [ "$(grep -c '^ No Errors$' <<<"$out")" = 1 ] ||
            why="exit $rc, want 0 and one ' No Errors' line"
    elif [ "$rc" != "$want" ]; then
        why="exit $rc, want $want"
    fi
    for re in "${regexes[@]}"; do
        [ -n "$why" ] || grep -Eiq -- "$re" <<<"$out" || why="no line matches /$re/"
    done
    if [ -z "$why" ] && [ "$want" = nonzero ]; then
        ok "$name (exit $rc)"
    elif [ -z "$why" ]; then
        ok "$name"
    else
        bad "$name ($why)"
        sed 's/^/     | /' <<<"$out" | tail -n 25
    fi
}

# check_layout NAME EXPECTED -- command...: exit 0, " No Errors", and the sorted "layout r:n"
# lines of the job (rank:node index of its shared-memory segment) equal to EXPECTED.
check_layout() {
    local name=$1 want=$2 out got rc
    shift 3
    out=$(timeout -k 5 "$JOB_TIMEOUT" "$@" 2>&1)
    rc=$?
    got=$(sed -n 's/^layout //p' <<<"$out" | sort -n | tr '\n' ' ' | sed 's/ $//')
    if [ "$rc" = 0 ] && [ "$got" = "$want" ] && [ "$(grep -c '^ No Errors$' <<<"$out")" = 1 ]; then
        ok "$name: $got"
    else
        bad "$name: exit $rc, layout '$got', want '$want'"
        sed 's/^/     | /' <<<"$out" | tail -n 25
    fi
}

# Failure case: the job must end non-zero; afterwards no rank and no /dev/shm file of it.
# The job's name (PMIx namespace or PMI job id) is what Reflex names its segments by; rank 0
# writes it down through a wrapper that then execs the program.
cat >"$D/jobwrap" <<EOF
#!/bin/sh
[ "\${PMIX_RANK:-\${PMI_RANK:-0}}" = 0 ] && echo "\${PMIX_NAMESPACE:-\$PMI_JOBID}" >"$D/jobname"
exec "\$@"
EOF
chmod +x "$D/jobwrap"
check_failure() { # name -- command...
    local name=$1 job left files
    shift 2
    rm -f "$D/jobname"
    check "$name: ends non-zero" nonzero -- "$@"
    for _ in $(seq 1 50); do
        pgrep -f "$D/bin/" >/dev/null || break
        sleep 0.1
    done
    left=$(pgrep -f "$D/bin/" | wc -l)
    job=$(cat "$D/jobname" 2>/dev/null)
    files=$(find /dev/shm -maxdepth 1 -name "reflex-$job-*" 2>/dev/null | wc -l)
    if [ -n "$job" ] && [ "$left" = 0 ] && [ "$files" = 0 ]; then
        ok "$name: no rank and no /dev/shm/reflex-$job-* left"
    else
        bad "$name: job '${job:-?}': $left ranks and $files shm files left"
        pgrep -f "$D/bin/" | xargs -r kill -9 # only this run's programs live there
    fi
}

echo "== build (PREFIX=$PREFIX)"
mkdir -p "$D/bin"
build() { # name source
    "$PREFIX/bin/mpicc" -O1 -pthread -Wno-stringop-overflow -Itests/mpi -o "$D/bin/$1" "$2" ||
        { bad "build $1"; return 1; }
}
build ring examples/ring.c && build layout tests/launchers/layout.c &&
    build exit_rank tests/launchers/exit_rank.c &&
    for t in sendrecv coll order abort kill_rank; do build $t tests/mpi/$t.c || break; done
summary() {
    echo "launchers: $PASS passed, $FAIL failed"
    [ "$FAIL" = 0 ]
}
[ "$FAIL" = 0 ] || { summary; exit 1; }
B=$D/bin
steps_before=$(pgrep -xc slurmstepd)

echo "== start a local Slurm: munged, slurmctld, slurmd n1 and n2"
t0=$(date +%s%N)
cluster_start 2 || {
    bad "slurm start-up"
    summary
    exit 1
}
echo "cluster idle after $((($(date +%s%N) - t0) / 1000000)) ms"

# check_ring NAME NRANKS -- command...: examples/ring.c ran on Reflex with NRANKS ranks and got
# the right token and sum.
check_ring() {
    local name=$1 n=$2
    shift 3
    check "$name" 0 "^Reflex.*: $n ranks on" \
        "came back as $((n * (n - 1) / 2)) \(expected" "allreduce of 1..$n = $((n * (n + 1) / 2))\$" \
        -- "$@"
}

for mpi in pmi2 pmix; do
    echo "== srun --mpi=$mpi"
    SRUN=(srun --mpi="$mpi" --overcommit)
    check_ring "$mpi: ring, 1 node x 2" 2 -- "${SRUN[@]}" -N 1 -n 2 "$B/ring"
    check_layout "$mpi: layout, 1 node x 2" "0:0 1:0" -- "${SRUN[@]}" -N 1 -n 2 "$B/layout"
    check_layout "$mpi: layout, 2 nodes x 2" "0:0 1:0 2:1 3:1" -- "${SRUN[@]}" -N 2 -n 4 "$B/layout"
    check_ring "$mpi: ring, 2 nodes x 2" 4 -- "${SRUN[@]}" -N 2 -n 4 "$B/ring"
    for t in sendrecv coll order; do
        check "$mpi: $t, 2 nodes x 2" pass -- "${SRUN[@]}" -N 2 -n 4 "$B/$t"
    done
    for t in abort kill_rank exit_rank; do
        check_failure "$mpi: $t on 2 nodes" -- "${SRUN[@]}" -N 2 -n 4 "$D/jobwrap" "$B/$t"
    done
done
echo "== srun without --mpi (MpiDefault=pmi2)"
check_ring "default: ring, 2 nodes x 1" 2 -- srun -N 2 -n 2 "$B/ring"

if command -v mpirun.openmpi >/dev/null; then
    echo "== Open MPI mpirun (PMIx)"
    MPIRUN=(mpirun.openmpi --allow-run-as-root --oversubscribe)
    check_ring "mpirun: ring, 2 ranks" 2 -- "${MPIRUN[@]}" -n 2 "$B/ring"
    check_layout "mpirun: layout, 4 ranks" "0:0 1:0 2:0 3:0" -- "${MPIRUN[@]}" -n 4 "$B/layout"
    for t in sendrecv coll order; do
        check "mpirun: $t, 4 ranks" pass -- "${MPIRUN[@]}" -n 4 "$B/$t"
    done
    for t in abort kill_rank exit_rank; do
        check_failure "mpirun: $t" -- "${MPIRUN[@]}" -n 2 "$D/jobwrap" "$B/$t"
    done
else
    echo "skipped: Open MPI's mpirun.openmpi not found (apt-get install openmpi-bin)"
fi

echo "== stop Slurm; nothing may remain"
cluster_stop
sleep 0.5
left=$(pgrep -f "$D" | wc -l)
steps=$(($(pgrep -xc slurmstepd) - steps_before))
if [ "$left" = 0 ] && [ "$steps" -le 0 ]; then
    ok "no daemon, step or rank left"
else
    bad "$left processes of this run and $steps slurmstepd left"
    pgrep -af "$D"
fi
summary
