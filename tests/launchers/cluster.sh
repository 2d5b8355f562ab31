# cluster.sh -- a throw-away Slurm on this host, for tests/launchers/run.sh (source it).
#
# cluster_start NNODES starts munged (unless one already answers), slurmctld and NNODES slurmd
# daemons, each an emulated node n1..nN of one host (Debian's Slurm is built with multiple-slurmd
# support). Everything lives under $D (set by the caller): config, state, spool, logs. Steps use
# PMI-2 by default (MpiDefault=pmi2) and a rank that exits non-zero ends its step
# (KillOnBadExit=1). No systemd is needed: the daemons run in the foreground (-D) as our children
# and cluster_stop ends exactly those, by pid.
#
# srun --mpi=pmix on emulated nodes: every slurmstepd creates the same directory
# <PMIxCliTmpDirBase>/spmix_appdir_<uid>_<job>.<step>, and the second fails with "File exists"
# (the setting does not expand %n). So each slurmd runs in its own mount namespace where
# $D/pmixcli is a bind mount of its private $D/pmixcli-<node>.
#
# Ports: LAUNCHERS_SLURM_PORT (slurmctld; default 16817), the slurmd daemons the next ones.

CLUSTER_PIDS=()
CLUSTER_MUNGED=

cluster_log() { echo "launchers: $*" >&2; }

# Starts munged as the munge user (it refuses a key it does not own), unless one answers.
cluster_munge() {
    munge -n >/dev/null 2>&1 && return 0
    [ -f /etc/munge/munge.key ] || runuser -u munge -- mungekey -c || return 1
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- munged || return 1
    CLUSTER_MUNGED=$(cat /run/munge/munged.pid 2>/dev/null)
    for _ in $(seq 1 100); do
        munge -n >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    cluster_log "munged does not answer"
    return 1
}

cluster_conf() { # nnodes port
    local n=$1 port=$2
    cat >"$D/slurm.conf" <<CONF
ClusterName=reflextest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool-%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
MpiDefault=pmi2
KillOnBadExit=1
NodeName=n[1-$n] NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((port + 1))-$((port + n)) CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    echo "PMIxCliTmpDirBase=$D/pmixcli" >"$D/mpi.conf"
}

cluster_start() { # nnodes
    local n=$1 port=${LAUNCHERS_SLURM_PORT:-16817} i
    mkdir -p "$D/state" "$D/log" "$D/pmixcli"
    cluster_munge || return 1
    cluster_conf "$n" "$port"
    export SLURM_CONF=$D/slurm.conf
    slurmctld -D -f "$SLURM_CONF" >"$D/log/slurmctld.out" 2>&1 &
    CLUSTER_PIDS+=($!)
    for i in $(seq 1 "$n"); do
        mkdir -p "$D/pmixcli-n$i"
        # unshare execs sh, which execs slurmd: $! is slurmd's pid.
        unshare --mount --propagation private sh -c \
            "mount --bind '$D/pmixcli-n$i' '$D/pmixcli' && exec slurmd -D -f '$SLURM_CONF' -N n$i" \
            >"$D/log/slurmd-n$i.out" 2>&1 &
        CLUSTER_PIDS+=($!)
    done
    for _ in $(seq 1 300); do
        [ "$(sinfo -h -o '%T %D' 2>/dev/null)" = "idle $n" ] && return 0
        sleep 0.1
    done
    cluster_log "the $n nodes did not become idle in 30 s:"
    sinfo >&2
    tail -n 5 "$D"/log/*.log "$D"/log/*.out >&2
    return 1
}

cluster_stop() {
    local pid
    for pid in "${CLUSTER_PIDS[@]}"; do
        kill "$pid" 2>/dev/null
    done
    for pid in "${CLUSTER_PIDS[@]}"; do
        wait "$pid" 2>/dev/null
    done
    CLUSTER_PIDS=()
    if [ -n "$CLUSTER_MUNGED" ]; then
        kill "$CLUSTER_MUNGED" 2>/dev/null
        for _ in $(seq 1 100); do
            kill -0 "$CLUSTER_MUNGED" 2>/dev/null || break
            sleep 0.05
        done
        CLUSTER_MUNGED=
    fi
}
