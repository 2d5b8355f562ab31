#!/usr/bin/env bash
# Multi-host tests of mpiexec -hosts + reflexd, with hosts emulated by network namespaces.
#
# Creates N namespaces (rxh<tag>-1..4) on a bridge with 10.77.<k>.1..4/24, one reflexd in each
# (listening on its own address, certificates from a fresh CA), and runs mpiexec in the root
# namespace. Checks: launch on 1-4 hosts, -l labels and placement, environment and cwd, exit
# codes, stdin to rank 0, an MPI program across hosts (if libmpi and an MPI compiler are there),
# spawned jobs (placement, a spawn failing on one host, a failing spawned rank),
# a killed rank, SIGTERM to mpiexec, Ctrl-Z (SIGTSTP) and SIGCONT of a job stopped longer than
# the heartbeat timeout, a link dropped by a firewall rule (nftables), a killed daemon, refused certificates (other CA, other user, other
# host, expired or not yet valid user and host certificates), an unprivileged user, hostile peers
# (random bytes, a web client, a cut TLS hello: dropped, the daemon serves on); after each
# failure case no process of the job and no job cgroup may remain. Everything is removed at the
# end (trap). Skips cleanly (exit 0) without root or `ip netns`.
#
# Usage: tests/hosts/run.sh [BIN_DIR]   (BIN_DIR holds mpiexec, reflexd, reflex-session,
#        reflex-ca; default: $CARGO_TARGET_DIR/release, else target/release)
#        MPI_LIB_DIR=dir with libmpi.so.12/libmpich.so.12 to also run an MPI program.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release}
PASS=0
FAIL=0
source tests/hosts/lib.sh
MPIEXEC=("$BIN/mpiexec" -certs "$T/root")
# Every job of the failure cases sleeps for a duration unique to this run (GNU sleep takes
# fractions), so its processes can be found, and only they.
sleep_mark() { echo "1000.$$$1"; }

# check NAME WANT_RC OUT_REGEX -- command...   (stdout+stderr must match OUT_REGEX)
check() {
    local name=$1 want=$2 regex=$3; shift 4
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" = "$want" ] && grep -Eq -- "$regex" <<<"$out"; then
        PASS=$((PASS + 1)); printf 'PASS  %s\n' "$name"
    else
        FAIL=$((FAIL + 1)); printf 'FAIL  %s (exit %s, want %s; output must match %s)\n' "$name" "$rc" "$want" "$regex"
        sed 's/^/     | /' <<<"$out" | head -20
    fi
}

# check_log NAME FILE FROM_LINE REGEX: a line of FILE after line FROM_LINE matches REGEX (a
# daemon's session may log a moment after mpiexec has exited).
check_log() {
    local name=$1 file=$2 from=$3 regex=$4
    for _ in $(seq 1 300); do tail -n +"$((from + 1))" "$file" | grep -Eq -- "$regex" && break; sleep 0.01; done
    if tail -n +"$((from + 1))" "$file" | grep -Eq -- "$regex"; then
        PASS=$((PASS + 1)); printf 'PASS  %s\n' "$name"
    else
        FAIL=$((FAIL + 1)); printf 'FAIL  %s (no line of %s matches %s)\n' "$name" "$file" "$regex"
        tail -n +"$((from + 1))" "$file" | sed 's/^/     | /' | head -10
    fi
}
lines() { wc -l <"$1"; }

# Nothing of a job may remain: no process with the marker, no job cgroup.
check_clean() { # name marker
    local left cg
    for _ in $(seq 1 300); do pgrep -f "$2" >/dev/null || break; sleep 0.01; done
    left=$(pgrep -f "$2" | wc -l)
    cg=$(find /sys/fs/cgroup -maxdepth 3 -path '*/reflex/reflexd-*' -type d 2>/dev/null | wc -l)
    if [ "$left" = 0 ] && [ "$cg" = 0 ]; then
        PASS=$((PASS + 1)); printf 'PASS  %s: nothing left\n' "$1"
    else
        FAIL=$((FAIL + 1)); printf 'FAIL  %s: %s processes and %s job cgroups left\n' "$1" "$left" "$cg"
        pkill -9 -f "$2"   # the marker is unique to this run
    fi
}

echo "== launch"
check "1 host" 0 '^hello$' -- "${MPIEXEC[@]}" -hosts "$NET.1" -n 1 echo hello
check "4 hosts, 8 ranks, labels" 0 '\[7\] 7 of 8 on 4/2' -- \
    "${MPIEXEC[@]}" -hosts "$(hosts 4 2)" -n 8 -l sh -c 'echo $PMI_RANK of $PMI_SIZE on $(ip -4 -o addr show eth0 | sed "s/.*\.\([0-9]*\)\/.*/\1/")/$MPI_LOCALNRANKS'
HOSTNUM='$(ip -4 -o addr show eth0 | sed "s/.*\.\([0-9]*\)\/.*/\1/")'
check "-ppn 1 over 2 hosts" 0 '^0:1 1:2 2:1$' -- sh -c "\"\$0\" \"\$@\" | sort | tr '\n' ' ' | sed 's/ \$//'" \
    "${MPIEXEC[@]}" -hosts "$(hosts 2 4)" -ppn 1 -n 3 sh -c "echo \$PMI_RANK:$HOSTNUM"
check "environment and working directory" 0 "^X=42 $T\$" -- \
    "${MPIEXEC[@]}" -hosts "$NET.2" -genv X 42 -wdir "$T" sh -c 'echo X=$X $(pwd)'
check "hostfile" 0 '^2$' -- sh -c "printf '$NET.3 slots=2\n' > $T/hf && \"\$0\" \"\$@\" | grep -c x" \
    "${MPIEXEC[@]}" -f "$T/hf" -n 2 echo x
check "stdin goes to rank 0" 0 '^one line$' -- sh -c "echo 'one line' | \"\$0\" \"\$@\"" \
    "${MPIEXEC[@]}" -hosts "$(hosts 2)" -n 2 cat

echo "== failures"
check "exit code of the first failing rank" 7 'rank 3 \(on '"$NET"'.4\) exited with status 7' -- \
    "${MPIEXEC[@]}" -hosts "$(hosts 4)" -n 4 sh -c "[ \$PMI_RANK = 3 ] && exit 7; sleep $(sleep_mark 1)"
check_clean "failing rank" "sleep $(sleep_mark 1)"
check "a killed rank" 137 'killed by signal 9' -- \
    "${MPIEXEC[@]}" -hosts "$(hosts 2)" -n 2 sh -c "[ \$PMI_RANK = 1 ] && kill -9 \$\$; (sleep $(sleep_mark 2) &) ; sleep $(sleep_mark 2)"
check_clean "killed rank" "sleep $(sleep_mark 2)"
"${MPIEXEC[@]}" -hosts "$(hosts 2)" -n 2 sh -c "setsid sleep $(sleep_mark 3) & sleep $(sleep_mark 3)" >"$T/term.out" 2>&1 &
MP=$!
for _ in $(seq 1 500); do [ "$(pgrep -fc "sleep $(sleep_mark 3)")" -ge 4 ] && break; sleep 0.01; done
kill -TERM $MP; wait $MP; rc=$?
if [ $rc = 143 ]; then PASS=$((PASS + 1)); echo "PASS  SIGTERM to mpiexec ends the job (143)"; else FAIL=$((FAIL + 1)); echo "FAIL  SIGTERM to mpiexec: exit $rc"; cat "$T/term.out"; fi
check_clean "SIGTERM (with a setsid child)" "sleep $(sleep_mark 3)"

echo "== MPI_Comm_spawn (PMI spawn) across hosts"
R="$BIN/pmi-test-rank"
# The parent takes host 1's only slot: the first child goes to host 2's free slot, the next
# ones are dealt from the start of the list (1, then 2); nodes are numbered by first use.
check "spawned ranks fill free slots, then are dealt" 0 '\[1:2\] layout 2 kvsname=\S+ mapping=Some\(\[0, 1, 0\]\)' -- \
    "${MPIEXEC[@]}" -l -hosts "$(hosts 2 1)" -n 1 "$R" init @0:spawn:2+1 finalize -- init parent exchange layout finalize
check "the spawn succeeds with every command's appnum" 0 '\[1:2\] parent 2 spawned=true port=port-of-0 appnum=Some\(1\) size=3' -- \
    "${MPIEXEC[@]}" -l -hosts "$(hosts 2 1)" -n 1 "$R" init @0:spawn:2+1 finalize -- init parent finalize
# Command 0 starts on host 2, command 1 (a missing program) fails on host 1: the spawn fails,
# host 2's child is killed, the parent goes on.
check "a spawn that fails on one host fails, the job goes on" 0 'msg=rank_1_of_spawned_job_1_\(on_'"$NET"'.1\)_cannot_start.*/no/such.*No_such_file' -- \
    "${MPIEXEC[@]}" -hosts "$(hosts 2 1)" -n 1 "$R" init "spawn-prog:$(realpath "$R")|/no/such:1" finalize \
    -- init sleep "print:$(sleep_mark 6)"
check_clean "the half-started spawn" "print:$(sleep_mark 6)"
check "a spawn on a host without reflexd fails" 0 "spawned rc=-1 errcodes=42 msg=cannot_reach_reflexd_on_$NET.254" -- \
    "${MPIEXEC[@]}" -hosts "$NET.1" -n 1 "$R" init "spawn:1:host=$NET.254" finalize
# A spawn onto an address nobody answers ARP for takes seconds to fail; meanwhile mpiexec keeps
# serving the job: rank 1 fails just after rank 0 asked, and the job ends at once, before the
# spawn is answered (rank 0 never prints its result).
out=$("${MPIEXEC[@]}" -hosts "$(hosts 2 1)" -n 2 "$R" init "@0:touch:$T/asked" "@0:spawn:1:host=$NET.253" \
    "@1:wait-file:$T/asked" @1:exit:7 2>&1); rc=$?
if [ $rc = 7 ] && grep -q 'rank 1 .*exited with status 7' <<<"$out" && ! grep -q 'spawned rc' <<<"$out"; then
    PASS=$((PASS + 1)); echo "PASS  a spawn still connecting does not hold up the job"
else
    FAIL=$((FAIL + 1)); echo "FAIL  a spawn still connecting held up the job (exit $rc)"; sed 's/^/     | /' <<<"$out" | head
fi
check "a failing spawned rank ends the whole job" 5 'rank 0 of spawned job 1 \(on '"$NET"'.2\) exited with status 5' -- \
    "${MPIEXEC[@]}" -hosts "$(hosts 2 1)" -n 1 "$R" init spawn:1 "print:$(sleep_mark 7)" sleep -- init exit:5
check_clean "a failing spawned rank" "print:$(sleep_mark 7)"

echo "== security"
check "certificate from another CA" 1 'lost host .*(certificate|tls|closed)' -- \
    "$BIN/mpiexec" -certs "$T/rogue" -hosts "$NET.1" true
check "a certificate for another user" 1 'certificate is for user "nobody", the client says "root"' -- \
    "$BIN/mpiexec" -certs "$T/nobody" -hosts "$NET.1" true
chown -R nobody "$T/nobody"
check "an unprivileged user runs as itself" 0 '^65534$' -- \
    runuser -u nobody -- "$BIN/mpiexec" -certs "$T/nobody" -hosts "$NET.1" -wdir / id -u
ip netns exec "rxh$TAG-1" "$BIN/reflexd" -listen "$NET.1:$((PORT + 1))" -certs "$T/host2" \
    >"$T/wrong-host.log" 2>&1 &
DPID+=($!)
for _ in $(seq 1 500); do grep -q listening "$T/wrong-host.log" && break; sleep 0.01; done
check "a daemon with another host's certificate" 1 'lost host .*(certificate|NotValidForName)' -- \
    "${MPIEXEC[@]}" -hosts "$NET.1" -reflexd-port $((PORT + 1)) true
# Certificates outside their validity period, refused with the dates on both sides.
"$BIN/reflex-ca" user --valid-from 2020-01-01 --not-after 2020-12-31 "$T/ca" root "$T/expired-user" 2>/dev/null
"$BIN/reflex-ca" user --valid-from 2999-01-01 "$T/ca" root "$T/future-user" 2>/dev/null
"$BIN/reflex-ca" host --valid-from 2020-01-01 --not-after 2020-12-31 "$T/ca" "$NET.2" "$T/expired-host2" 2>/dev/null
from=$(lines "$T/reflexd1.log")
check "an expired user certificate" 1 "lost host $NET.1: tls: the peer refused our certificate as expired or not yet valid" -- \
    "$BIN/mpiexec" -certs "$T/expired-user" -hosts "$NET.1" true
check_log "the daemon refuses the expired user certificate" "$T/reflexd1.log" "$from" \
    "client $NET.254:[0-9]+: tls: the peer's certificate expired on 2020-12-31 00:00 UTC \([0-9]+ days ago\)"
from=$(lines "$T/reflexd1.log")
check "a user certificate not valid yet" 1 "lost host $NET.1: tls: the peer refused our certificate as expired or not yet valid" -- \
    "$BIN/mpiexec" -certs "$T/future-user" -hosts "$NET.1" true
check_log "the daemon refuses the future user certificate" "$T/reflexd1.log" "$from" \
    "tls: the peer's certificate is not valid before 2999-01-01 00:00 UTC"
ip netns exec "rxh$TAG-2" "$BIN/reflexd" -listen "$NET.2:$((PORT + 2))" -certs "$T/expired-host2" \
    >"$T/expired-host.log" 2>&1 &
DPID+=($!)
for _ in $(seq 1 500); do grep -q listening "$T/expired-host.log" && break; sleep 0.01; done
check "a daemon with an expired host certificate" 1 "lost host $NET.2: tls: the peer's certificate expired on 2020-12-31 00:00 UTC" -- \
    "${MPIEXEC[@]}" -hosts "$NET.2" -reflexd-port $((PORT + 2)) true
check_log "the daemon hears that its certificate is expired" "$T/expired-host.log" 0 \
    "client $NET.254:[0-9]+: tls: the peer refused our certificate as expired or not yet valid"
echo "== hostile peers: random bytes, a web client, a cut TLS hello, an empty connection"
hostile() { # command that writes what the peer sends
    timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 0; shift 2; "$@" >&3 2>/dev/null; exec 3>&-' \
        "$NET.1" "$PORT" "$@"
}
for n in 1 300 4096 65536 1048576; do hostile head -c "$n" /dev/urandom; done
hostile printf 'GET / HTTP/1.1\r\nHost: reflex\r\n\r\n'
hostile printf '\026\003\001\002\000\001\000\001\374\003\003'
hostile true
# Every session ends and the daemon reaps it at once (a zombie here was a SIGCHLD lost to the
# announcer thread).
for _ in $(seq 1 500); do [ -z "$(pgrep -P "${DPID[1]}")" ] && break; sleep 0.01; done
if kill -0 "${DPID[1]}" 2>/dev/null && [ -z "$(pgrep -P "${DPID[1]}")" ]; then
    PASS=$((PASS + 1)); echo "PASS  hostile peers: the daemon is alive and every session is gone (reaped)"
else
    FAIL=$((FAIL + 1)); echo "FAIL  after hostile peers: daemon alive: $(kill -0 "${DPID[1]}" 2>/dev/null && echo yes || echo no), sessions: $(pgrep -P "${DPID[1]}" | tr '\n' ' ')"
fi
check "a job after the hostile peers" 0 '^still serving$' -- "${MPIEXEC[@]}" -hosts "$NET.1" echo still serving
if [ -n "${MPI_LIB_DIR:-}" ] && [ -e "${MPI_LIB_DIR}/libmpi.so.12" ] && command -v mpicc.mpich >/dev/null; then
    echo "== MPI across hosts (TCP between hosts, shared memory within)"
    mpicc.mpich -O2 examples/ring.c -o "$T/ring"
    check "ring on 2 hosts x 2 ranks" 0 'came back as 6 \(expected 6\)' -- \
        env LD_LIBRARY_PATH="$MPI_LIB_DIR" "${MPIEXEC[@]}" -hosts "$(hosts 2 2)" -n 4 "$T/ring"
    check "ring on 4 hosts" 0 'came back as 6 \(expected 6\)' -- \
        env LD_LIBRARY_PATH="$MPI_LIB_DIR" "${MPIEXEC[@]}" -hosts "$(hosts 4)" -n 4 "$T/ring"
fi

echo "== a frozen host (heartbeats)"
"${MPIEXEC[@]}" -hosts "$(hosts 3)" -n 3 sh -c "sleep $(sleep_mark 5)" >"$T/fz.out" 2>&1 &
MP=$!
for _ in $(seq 1 500); do [ "$(pgrep -fc "sleep $(sleep_mark 5)")" -ge 3 ] && break; sleep 0.01; done
SESSION=$(pgrep -P "${DPID[3]}" | head -1)
kill -STOP "$SESSION"
wait $MP; rc=$?
kill -CONT "$SESSION"
if [ $rc = 1 ] && grep -q "lost host $NET.3: no heartbeat" "$T/fz.out"; then
    PASS=$((PASS + 1)); echo "PASS  a frozen session is declared dead (exit 1)"
else
    FAIL=$((FAIL + 1)); echo "FAIL  frozen session: exit $rc"; cat "$T/fz.out"
fi
check_clean "frozen host" "sleep $(sleep_mark 5)"

echo "== a dropped link (a firewall rule in host 3's namespace drops everything)"
if command -v nft >/dev/null; then
    "${MPIEXEC[@]}" -hosts "$(hosts 3)" -n 3 sh -c "sleep $(sleep_mark 6)" >"$T/fw.out" 2>&1 &
    MP=$!
    for _ in $(seq 1 500); do [ "$(pgrep -fc "sleep $(sleep_mark 6)")" -ge 3 ] && break; sleep 0.01; done
    ip netns exec "rxh$TAG-3" nft -f - <<'NFT'
table inet reflex_drop {
    chain input { type filter hook input priority 0; policy drop; }
    chain output { type filter hook output priority 0; policy drop; }
}
NFT
    wait $MP; rc=$?
    if [ $rc = 1 ] && grep -q "lost host $NET.3: no heartbeat" "$T/fw.out"; then
        PASS=$((PASS + 1)); echo "PASS  a host behind a dropped link is declared dead (exit 1)"
    else
        FAIL=$((FAIL + 1)); echo "FAIL  dropped link: exit $rc"; cat "$T/fw.out"
    fi
    # The cut-off session hears no heartbeat from mpiexec either and ends its ranks by itself.
    for _ in $(seq 1 1000); do pgrep -f "sleep $(sleep_mark 6)" >/dev/null || break; sleep 0.01; done
    check_clean "dropped link" "sleep $(sleep_mark 6)"
    ip netns exec "rxh$TAG-3" nft delete table inet reflex_drop
else
    echo "SKIP  dropped link: nft (nftables) is not installed"
fi

echo "== Ctrl-Z and fg (stopped longer than the heartbeat timeout)"
# Each rank prints its pid, then waits for a file that appears while the job is stopped
# (pmi-test-rank polls without forking: a shell's `sleep` child can leave it in vfork, state D).
"${MPIEXEC[@]}" -hosts "$(hosts 2)" -n 2 "$BIN/pmi-test-rank" pid "wait-file:$T/go" >"$T/tstp.out" 2>&1 &
MP=$!
for _ in $(seq 1 500); do [ "$(grep -c ^pid "$T/tstp.out")" = 2 ] && break; sleep 0.01; done
JOB="$MP $(awk '/^pid/ {print $3}' "$T/tstp.out")"
state() { for p in $JOB; do awk '{print $3}' "/proc/$p/stat" 2>/dev/null || echo gone; done | tr '\n' ' '; }
kill -TSTP $MP
for _ in $(seq 1 500); do [ "$(state)" = "T T T " ] && break; sleep 0.01; done
[ "$(state)" = "T T T " ]; stopped=$?
touch "$T/go"
sleep 8   # the job stays stopped past the heartbeat timeout (6 s)
after=$(state)
kill -CONT $MP
wait $MP; rc=$?
if [ $stopped = 0 ] && [ "$after" = "T T T " ] && [ $rc = 0 ] && [ "$(grep -c '^waited' "$T/tstp.out")" = 2 ]; then
    PASS=$((PASS + 1)); echo "PASS  SIGTSTP stops mpiexec and every rank for 8 s, SIGCONT finishes the job (exit 0)"
else
    FAIL=$((FAIL + 1)); echo "FAIL  Ctrl-Z: stopped=$stopped, states after 8 s: $after, exit $rc"; cat "$T/tstp.out"
fi

echo "== a killed daemon"
"${MPIEXEC[@]}" -hosts "$(hosts 2)" -n 2 sh -c "sleep $(sleep_mark 4)" >"$T/kd.out" 2>&1 &
MP=$!
for _ in $(seq 1 500); do [ "$(pgrep -fc "sleep $(sleep_mark 4)")" -ge 2 ] && break; sleep 0.01; done
kill -9 "${DPID[2]}"
wait $MP; rc=$?
if [ $rc != 0 ] && grep -q "lost host $NET.2\|reflexd is shutting down" "$T/kd.out"; then
    PASS=$((PASS + 1)); echo "PASS  a killed daemon ends the job (exit $rc)"
else
    FAIL=$((FAIL + 1)); echo "FAIL  killed daemon: exit $rc"; cat "$T/kd.out"
fi
check_clean "killed daemon" "sleep $(sleep_mark 4)"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
