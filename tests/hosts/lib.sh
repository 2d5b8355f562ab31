# Shared set-up of the namespace-based host tests and benchmarks (sourced by run.sh, bench.sh,
# discovery.sh): N network namespaces on a bridge (with a multicast route, for discovery), a CA
# with host and user certificates, one reflexd per namespace (plus the flags in DAEMON_ARGS, if
# set). Expects BIN (the binaries' directory); defines NET, PORT, T, hosts(), start_daemon(),
# and removes everything on exit.
TAG=$(( $$ % 1000 ))
NET=10.77.$(( $$ % 200 + 20 ))
PORT=7290
T=$(mktemp -d /tmp/reflex-hosts.XXXXXX) && chmod 755 "$T"
PASS=0
FAIL=0

skip() { echo "tests/hosts: skipped: $*"; rm -rf "$T"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "no ip command (iproute2)"
for b in mpiexec reflexd reflex-session reflex-ca pmi-test-rank; do
    [ -x "$BIN/$b" ] || { echo "tests/hosts: $BIN/$b missing (cargo build --release -p reflex-launch -p reflexd)"; exit 1; }
done
ip netns add "rxprobe$TAG" 2>/dev/null || skip "ip netns is not available here"
ip netns del "rxprobe$TAG"

NS=() DPID=()
cleanup() {
    for p in "${DPID[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${DPID[@]}"; do
        for _ in $(seq 1 500); do kill -0 "$p" 2>/dev/null || break; sleep 0.01; done
    done
    for ns in "${NS[@]}"; do ip netns del "$ns" 2>/dev/null; done
    ip link del "rxbr$TAG" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

# --- network: a bridge in the root namespace, one veth per host namespace
ip link add "rxbr$TAG" type bridge mcast_snooping 0 && ip addr add "$NET.254/24" dev "rxbr$TAG" && ip link set "rxbr$TAG" up
for i in 1 2 3 4; do
    ns="rxh$TAG-$i"
    ip netns add "$ns" && NS+=("$ns")
    ip link add "rxv$TAG-$i" type veth peer name eth0 netns "$ns"
    ip link set "rxv$TAG-$i" master "rxbr$TAG" up
    ip -n "$ns" addr add "$NET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" route add 224.0.0.0/4 dev eth0
done

# --- certificates: one CA, a host certificate per address, users root, nobody, rogue
"$BIN/reflex-ca" init "$T/ca" "Reflex test CA"
"$BIN/reflex-ca" user "$T/ca" root "$T/root"
"$BIN/reflex-ca" user "$T/ca" nobody "$T/nobody"
"$BIN/reflex-ca" init "$T/rogue-ca" "Rogue CA"
"$BIN/reflex-ca" user "$T/rogue-ca" root "$T/rogue"
cp "$T/ca/ca.pem" "$T/rogue/ca.pem"   # the rogue user trusts the real hosts
for i in 1 2 3 4; do "$BIN/reflex-ca" host "$T/ca" "$NET.$i" "$T/host$i"; done

start_daemon() { # i
    # Started from a subshell, so that it is not a job of this shell (no "Killed" notices).
    DPID[$1]=$(ip netns exec "rxh$TAG-$1" "$BIN/reflexd" -listen "$NET.$1:$PORT" \
        -certs "$T/host$1" ${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"} >"$T/reflexd$1.log" 2>&1 & echo $!)
    for _ in $(seq 1 500); do grep -q listening "$T/reflexd$1.log" && return 0; sleep 0.01; done
    echo "reflexd $1 did not start"; cat "$T/reflexd$1.log"; exit 1
}
for i in 1 2 3 4; do start_daemon $i; done

hosts() { local n=$1 list=""; for i in $(seq 1 "$n"); do list+="${list:+,}$NET.$i${2:+:$2}"; done; echo "$list"; }
