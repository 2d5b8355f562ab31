#!/usr/bin/env bash
# A connection between two live ranks that breaks (here destroyed with `ss -K`, as a reset or an
# abort would) must end the job with a message, not leave both ranks waiting forever: each rank
# blocked on the other finds the link failed (after the engine's 3 s grace) and its wait fails
# with MPI_ERR_OTHER. Cases: the default error handler (the job ends, exit 1, "the connection to
# rank N failed"), and MPI_ERRORS_RETURN (the receive returns MPI_ERR_OTHER with that text; the
# program then aborts with 3); the same for ranks polling MPI_Test, and for a rank whose sends wait
# for room on the connection (queued, not waiting for any message). All over TCP on this host (REFLEX_TCP_LOCAL=1), with 1 and 4
# sockets per pair. And a link that goes silent instead (the job runs in a network namespace of
# its own whose loopback is then taken down: no reset, no data, as when a host dies or its
# network is cut): TCP keepalive (REFLEX_TCP_KEEPALIVE=2: probes after 2 s, every second, 3 of
# them) must fail the connection (ETIMEDOUT, or the transport reads the unanswered probes first),
# and the job end as above, within about 8 s; the same with data
# in flight (a flooding rank: keepalive does not probe then, and the transport must notice the
# unanswered retransmissions itself, after the same 5 s without an acknowledgement). Needs
# CAP_NET_ADMIN and a kernel with socket destruction (skips otherwise).
# Usage: tests/hosts/link-failure.sh [INSTALL_PREFIX]   (default install)
set -uo pipefail
cd "$(dirname "$0")/../.."
PREFIX=${1:-install}
PASS=0
FAIL=0
T=$(mktemp -d /tmp/reflex-linkfail.XXXXXX)
NS=rfx-silent-$$
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT

# Socket destruction is there when ss -K can destroy a connection of our own.
python3 - <<'PY' || { echo "SKIP  link failure: ss -K cannot destroy sockets here (root and CONFIG_INET_DIAG_DESTROY needed)"; exit 0; }
import socket, subprocess, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(); port = l.getsockname()[1]
c = socket.create_connection(("127.0.0.1", port)); s, _ = l.accept()
subprocess.run(["ss", "-K", "dst", "127.0.0.1", "dport", "=", str(port)], capture_output=True)
c.settimeout(2)
try:
    c.recv(1)
    sys.exit(1)
except OSError:
    sys.exit(0)
PY
"$PREFIX/bin/mpicc" -O2 tests/hosts/stall.c -o "$T/stall" || { echo "FAIL  build stall.c"; exit 1; }

# Destroys every TCP connection of the processes whose command line is $T/stall.
break_links() {
    local pids p
    pids=$(pgrep -f "^$T/stall") || return 1
    for p in $pids; do
        ss -Htnp state established | awk -v p="pid=$p," 'index($0, p) {print $3, $4}' |
            while read -r src dst; do
                ss -K src "${src%:*}" sport = ":${src##*:}" dst "${dst%:*}" dport = ":${dst##*:}" >/dev/null 2>&1
            done
    done
}

# Silences every connection of the job running in namespace $NS: its loopback goes down.
silence_links() {
    ip -n "$NS" link set lo down
}

# run NAME WANT_RC REGEX BREAKER [env VAR=val ...] -- stall arguments
run() {
    local name=$1 want=$2 regex=$3 breaker=$4; shift 4
    local out=$T/out
    timeout 60 env REFLEX_TCP_LOCAL=1 "$@" >"$out" 2>&1 &
    local job=$!
    for _ in $(seq 1 1000); do grep -q '^linked' "$out" && break; sleep 0.01; done
    sleep 0.2
    $breaker
    wait $job; local rc=$?
    if [ "$rc" = "$want" ] && grep -Eq -- "$regex" "$out" && ! pgrep -f "^$T/stall" >/dev/null; then
        PASS=$((PASS + 1)); echo "PASS  $name (exit $rc)"
    else
        FAIL=$((FAIL + 1)); echo "FAIL  $name: exit $rc (want $want), output:"; sed 's/^/    | /' "$out"
        pkill -9 -f "^$T/stall"
    fi
}

MPIEXEC=("$PREFIX/bin/mpiexec" -n 2)
run "broken connection, default error handler" 1 "fatal error on rank [01] in MPI_Recv: .*the connection to rank [01] failed" \
    break_links "${MPIEXEC[@]}" "$T/stall"
run "broken connection, MPI_ERRORS_RETURN" 3 "MPI_Recv returned class 15 \(MPI_ERR_OTHER\): .*the connection to rank [01] failed" \
    break_links "${MPIEXEC[@]}" "$T/stall" return
run "broken connection, 4 sockets per pair" 1 "the connection to rank [01] failed" \
    break_links env REFLEX_TCP_STREAMS=4 "${MPIEXEC[@]}" "$T/stall"
run "broken connection, polling MPI_Test" 1 "fatal error on rank [01] in MPI_Test: .*the connection to rank [01] failed" \
    break_links "${MPIEXEC[@]}" "$T/stall" test
run "broken connection, sends waiting for room" 1 "fatal error on rank 0 in MPI_Waitall: .*the connection to rank 1 failed" \
    break_links "${MPIEXEC[@]}" "$T/stall" flood
if ip netns add "$NS" && ip -n "$NS" link set lo up; then
    run "silent connection (keepalive), MPI_ERRORS_RETURN" 3 \
        "MPI_Recv returned class 15 \(MPI_ERR_OTHER\): .*the connection to rank [01] failed \((.*timed out|nothing sent to it was acknowledged)" \
        silence_links ip netns exec "$NS" env REFLEX_TCP_KEEPALIVE=2 "${MPIEXEC[@]}" "$T/stall" return
    # Data in flight: keepalive does not probe then; the unanswered retransmissions tell.
    ip -n "$NS" link set lo up
    run "silent connection with data in flight" 1 \
        "fatal error on rank 0 in MPI_Waitall: .*the connection to rank 1 failed \(nothing sent to it was acknowledged" \
        silence_links ip netns exec "$NS" env REFLEX_TCP_KEEPALIVE=2 "${MPIEXEC[@]}" "$T/stall" flood
else
    FAIL=$((FAIL + 1)); echo "FAIL  cannot make network namespace $NS"
fi
echo "link failure: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
