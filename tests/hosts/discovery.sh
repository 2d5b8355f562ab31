#!/usr/bin/env bash
# Discovery and selection over network namespaces: every reflexd announces its host on the
# bridge (UDP multicast, sealed with the cluster key) and runs a selector; mpiexec -n N without
# hosts asks a selector named in its configuration file.
#
# Checks: a selector sees all 4 hosts; mpiexec -n 4 with no hosts (REFLEX_CONFIG) runs one rank
# on each (least-load); -selector/-policy round-robin moves successive jobs along; -hosts still
# wins over the configuration; no configuration means this host; a SIGKILLed daemon disappears
# after expiry (3 intervals of 1 s), jobs then avoid it, and it reappears after a restart;
# garbage and an announcement sealed with another key are dropped (and logged), and the forged
# host never appears. Skips cleanly (exit 0) without root or `ip netns` (see lib.sh).
#
# Usage: tests/hosts/discovery.sh [BIN_DIR]   (BIN_DIR holds mpiexec, reflexd, reflex-session,
#        reflex-ca, reflex-select; default: $CARGO_TARGET_DIR/release, else target/release)
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release}
[ -x "$BIN/reflex-select" ] || { echo "tests/hosts: $BIN/reflex-select missing (cargo build --release -p reflexd)"; exit 1; }
DAEMON_ARGS=(-interval 1 -slots 2 -selector)
source tests/hosts/lib.sh
GROUP=239.255.72.90:$PORT
SELECT=("$BIN/reflex-select" -certs "$T/root")
printf '[mpiexec]\nselectors = ["%s.1"]\ncerts = "%s/root"\n' "$NET" "$T" >"$T/config.toml"
MPIEXEC=(env REFLEX_CONFIG="$T/config.toml" "$BIN/mpiexec")
HOSTNUM='$(ip -4 -o addr show eth0 | sed "s/.*\.\([0-9]*\)\/.*/\1/")'

result() { # ok name [details]
    if [ "$1" = 0 ]; then PASS=$((PASS + 1)); echo "PASS  $2"; else FAIL=$((FAIL + 1)); echo "FAIL  $2"; [ -n "${3:-}" ] && sed 's/^/     | /' <<<"$3" | head -20; fi
}

# The hosts selector $1 knows (names, sorted, space-separated).
members() { "${SELECT[@]}" -selector "$1" 2>/dev/null | awk '{print $1}' | sort | tr '\n' ' ' | sed 's/ $//'; }

# Polls until `members $1` equals $2 (announcements and expiry run on their own clocks: this is
# a deadline, not a sleep that the test depends on).
await_members() { # selector want seconds
    local got
    for _ in $(seq 1 $(($3 * 10))); do got=$(members "$1"); [ "$got" = "$2" ] && return 0; sleep 0.1; done
    echo "selector $1 knows [$got], want [$2]"; return 1
}

# The host numbers the ranks of an mpiexec command ran on, sorted, space-separated.
ranks_on() { "$@" sh -c "echo $HOSTNUM" 2>&1 | sort | tr '\n' ' ' | sed 's/ $//'; }

ALL="$NET.1 $NET.2 $NET.3 $NET.4"
echo "== discovery"
out=$(await_members "$NET.1" "$ALL" 20); result $? "a selector sees all 4 hosts" "$out"
out=$(await_members "$NET.3" "$ALL" 20); result $? "every daemon's selector sees them (replicas)" "$out"

echo "== selection"
got=$(ranks_on "${MPIEXEC[@]}" -n 4)
[ "$got" = "1 2 3 4" ]; result $? "mpiexec -n 4, no hosts: one rank per host (least-load)" "ranks ran on: $got"
a=$(ranks_on "${MPIEXEC[@]}" -selector "$NET.2" -policy round-robin -n 1)
b=$(ranks_on "${MPIEXEC[@]}" -selector "$NET.2" -policy round-robin -n 1)
[ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]; result $? "-selector -policy round-robin: successive jobs on different hosts" "first on $a, second on $b"
got=$(ranks_on "${MPIEXEC[@]}" -hosts "$NET.3" -n 2)
[ "$got" = "3 3" ]; result $? "-hosts wins over the configured selector" "ranks ran on: $got"
got=$(env -u REFLEX_CONFIG HOME="$T" "$BIN/mpiexec" -n 2 echo here 2>&1 | tr '\n' ' ')
[ "$got" = "here here " ]; result $? "no configuration: the job runs on this host" "$got"
got=$("${MPIEXEC[@]}" -selector "$NET.1:$((PORT + 9))" -n 1 true 2>&1)
grep -q "selector $NET.1:$((PORT + 9)): .*refused" <<<"$got"; result $? "an unreachable selector is a clear error" "$got"
got=$(ranks_on "${MPIEXEC[@]}" -selector "$NET.1:$((PORT + 9)),$NET.4" -n 1)
[ -n "$got" ] && ! grep -q refused <<<"$got"; result $? "the next selector of the list answers" "$got"

echo "== a daemon killed and restarted"
kill -9 "${DPID[4]}"
out=$(await_members "$NET.1" "$NET.1 $NET.2 $NET.3" 30); result $? "a killed daemon disappears after expiry" "$out"
got=$(ranks_on "${MPIEXEC[@]}" -n 3)
[ "$got" = "1 2 3" ]; result $? "jobs then run on the live hosts only" "ranks ran on: $got"
start_daemon 4
out=$(await_members "$NET.1" "$ALL" 30); result $? "discovery after a daemon restart" "$out"
grep -q "host $NET.4 is silent, dropped" "$T/reflexd1.log" && [ "$(grep -c "host $NET.4 joined" "$T/reflexd1.log")" = 2 ]
result $? "the selector logs the host leaving and joining again" "$(cat "$T/reflexd1.log")"

echo "== forged and malformed announcements"
ip netns exec "rxh$TAG-2" bash -c "printf 'not an announcement, just garbage: %s' \$(seq 1 20) >/dev/udp/${GROUP%:*}/${GROUP#*:}"
for _ in $(seq 1 100); do grep -q "malformed: not an announcement" "$T/reflexd1.log" && break; sleep 0.1; done
grep -q "dropped a datagram from $NET.2:[0-9]*: malformed: not an announcement" "$T/reflexd1.log"
result $? "garbage on the group is dropped and logged" "$(tail -5 "$T/reflexd1.log")"
sleep 1.1   # drops are logged at most once a second: let the next one be logged
# A daemon that holds another cluster key (the rogue CA's) announces a host "intruder".
printf '[discovery]\nannounce = true\nkey = "%s"\nnames = ["intruder"]\n' "$T/rogue-ca/cluster.key" >"$T/rogue.toml"
ip netns exec "rxh$TAG-3" "$BIN/reflexd" -config "$T/rogue.toml" -listen "$NET.3:$((PORT + 2))" \
    -certs "$T/host3" -interval 1 >"$T/rogue.log" 2>&1 &
DPID+=($!)
for _ in $(seq 1 100); do grep -q "forged" "$T/reflexd1.log" && break; sleep 0.1; done
out=$(await_members "$NET.1" "$ALL" 10)
grep -q "dropped a datagram from $NET.3:[0-9]*: forged" "$T/reflexd1.log" && ! grep -q intruder "$T/reflexd1.log"
result $? "an announcement sealed with another key is dropped; the host never appears" "$(tail -5 "$T/reflexd1.log"; echo "$out")"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
