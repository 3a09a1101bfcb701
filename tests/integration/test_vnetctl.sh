#!/bin/bash
# The control socket and vnetctl against a running vnetd that forwards:
#
#   - the socket exists with its configured mode (0660, made at creation)
#     and group, and goes away when vnetd exits;
#   - `vnetctl port list --json` names both ports, the VM port with its one
#     connected front end while vnet-pktgen is attached;
#   - after pktgen --tx sends N frames into vnetd -> tap, `vnetctl stats
#     --json` (summed over queues) says vm0 rx == tap tx == N, the same as
#     the kernel's tap rx_packets + rx_dropped and the final stats file;
#   - the table output has a line for vm0 q0 rx with N packets;
#   - every error path: an unknown method (exit 1, vnetd's message), bad
#     JSON on the socket (a -32700 answer, the connection stays usable), a
#     request line over 1 MiB (that client disconnected), a socket path
#     with no vnetd (exit 1 naming it), a socket that never answers
#     (`--timeout 1`: exit 1 after a second, saying so); vnetd keeps
#     forwarding through all of them and exits 0;
#   - a second vnetd given the same --control-socket fails to start,
#     naming the path; one left at the default while another holds the
#     default starts anyway, with a warning (two vnetd on a host must not
#     stop each other).
#
# Usage: test_vnetctl.sh BUILD_DIR   (as root)
set -u

BUILD_DIR=${1:?usage: $0 BUILD_DIR}
VNETD="$BUILD_DIR/apps/vnetd"
VNETCTL="$BUILD_DIR/apps/vnetctl"
PKTGEN="$BUILD_DIR/apps/vnet-pktgen"
HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-20000}  # at 5000 frames/s: 4 s with the front end attached

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap)"
for bin in "$VNETD" "$VNETCTL" "$PKTGEN"; do
    [ -x "$bin" ] || fail "$bin not built"
done

work_dir vnetctl
NS=$(ns_name vctl)
netns_new "$NS"
TAP=$(link_name vctl)
SOCK="$WORK/vm.sock"
CTL="$WORK/ctl/vnetd.ctl"
STATS="$WORK/stats.json"
ctl() { "$VNETCTL" --socket "$CTL" "$@"; }

bg_start --log "$WORK/vnetd.log" ip netns exec "$NS" "$VNETD" --socket-path "$SOCK" --tap "$TAP" \
    --control-socket "$CTL" --control-socket-group daemon --stats-file "$STATS"
VNETD_PID=$BG_PID
wait_for 10 "vnetd did not open its control socket" log_has "$WORK/vnetd.log" "control socket"
ip -n "$NS" link set "$TAP" up || fail "$TAP up"

# --- the socket file
read -r mode group < <(stat -c '%a %G' "$CTL") || fail "no socket at $CTL"
[ "$mode" = 660 ] || fail "control socket mode $mode, expected 660"
[ "$group" = daemon ] || fail "control socket group $group, expected daemon"
[ "$(ctl version)" = "$(ctl --json version | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')" ] ||
    fail "vnetctl version and --json version disagree"

# --- ports, with a front end attached
bg_start --log "$WORK/pktgen.log" "$PKTGEN" --socket-path "$SOCK" --tx --count "$N" --rate 5000 \
    --size 64 --stats-interval 0 --connect-timeout 10
PKTGEN_PID=$BG_PID
connected() {
    ctl --json port list | python3 -c '
import json, sys
ports = {p["name"]: p for p in json.load(sys.stdin)}
sys.exit(0 if ports["vm0"]["connections"] == 1 and ports["vm0"]["type"] == "vhost-user" else 1)'
}
wait_for 10 "vnetctl port list never showed vm0 connected" connected
ctl port list >"$WORK/ports.txt" || fail "vnetctl port list"
grep -qE "^vm0 +vhost-user +$SOCK +8 +$TAP +1$" "$WORK/ports.txt" ||
    fail "port list table: $(cat "$WORK/ports.txt")"

# --- counters
sum_stats() { # JSON-FILE PORT DIR -> packets summed over queues
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
p = next(p for p in j["ports"] if p["name"] == sys.argv[2])
print(sum(q[sys.argv[3]]["packets"] for q in p["queues"]))' "$@"
}
# One snapshot is not atomic across ports: the worker counts a burst on
# the tap as written, then on vm0 as completed, while the reporter reads
# vm0 before the tap. So wait for a snapshot in which both have settled;
# one that never shows vm0 rx = tap tx = N fails with both figures.
all_sent() {
    ctl --json stats >"$WORK/live.json" || return 1
    [ "$(sum_stats "$WORK/live.json" "$TAP" tx)" = "$N" ] &&
        [ "$(sum_stats "$WORK/live.json" vm0 rx)" = "$N" ]
}
wait_until 20 all_sent ||
    fail "vnetctl stats: vm0 rx $(sum_stats "$WORK/live.json" vm0 rx)," \
        "$TAP tx $(sum_stats "$WORK/live.json" "$TAP" tx), expected $N for both after 20 s"
vm_rx=$(sum_stats "$WORK/live.json" vm0 rx)
kernel=$(($(link_stat "$NS" "$TAP" rx_packets) + $(link_stat "$NS" "$TAP" rx_dropped)))
[ "$kernel" = "$N" ] || fail "kernel tap rx_packets + rx_dropped $kernel, vnetctl $N"
ctl stats >"$WORK/stats.txt" || fail "vnetctl stats"
grep -qE "^vm0 +0 +rx +$N " "$WORK/stats.txt" || fail "stats table: $(cat "$WORK/stats.txt")"
echo "vnetctl stats: vm0 rx $vm_rx = $TAP tx $N = kernel $kernel"

# --- errors: each one exact, none hurts the daemon
out=$(ctl call nope 2>&1) && fail "an unknown method succeeded: $out"
[ "$out" = "vnetctl: no method 'nope'" ] || fail "unknown method: '$out'"
out=$("$VNETCTL" --socket "$WORK/none.ctl" version 2>&1) && fail "no vnetd, yet: $out"
[[ "$out" == "vnetctl: cannot connect to $WORK/none.ctl: No such file or directory"* ]] ||
    fail "missing socket: '$out'"
# A socket that accepts and never answers (a wedged vnetd): --timeout ends the wait.
bg_start --log "$WORK/silent.log" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4); print("listening", flush=True)
held = [s.accept()[0] for _ in range(4)]
time.sleep(60)' "$WORK/silent.ctl"
SILENT_PID=$BG_PID
wait_for 10 "the silent socket did not listen" log_has "$WORK/silent.log" listening
t0=$(date +%s%N)
out=$("$VNETCTL" --socket "$WORK/silent.ctl" --timeout 1 version 2>&1) && fail "a silent socket answered: $out"
waited_ms=$((($(date +%s%N) - t0) / 1000000))
[ "$out" = "vnetctl: no answer from $WORK/silent.ctl within 1 s (vnetd busy or wedged)" ] ||
    fail "silent socket: '$out'"
[ "$waited_ms" -ge 900 ] && [ "$waited_ms" -lt 10000 ] || fail "--timeout 1 waited $waited_ms ms"
stop_pid "$SILENT_PID"
python3 - "$CTL" <<'PY' || fail "raw control socket checks"
import json, socket, sys
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
    return s, s.makefile("rb")
s, f = conn()
s.sendall(b"{this is not json\n")
r = json.loads(f.readline())
assert r["error"]["code"] == -32700 and r["id"] is None, r
s.sendall(b'{"jsonrpc":"2.0","id":5,"method":"version"}\n')
r = json.loads(f.readline())
assert r["id"] == 5 and "version" in r["result"], r
big, _ = conn()
try:
    big.sendall(b"x" * (2 << 20))
except (BrokenPipeError, ConnectionResetError):
    pass
try:
    ended = big.recv(1) == b""
except ConnectionResetError:  # closed with our bytes unread: a reset, as it should
    ended = True
assert ended, "an over-long line must end that connection"
s.sendall(b'{"jsonrpc":"2.0","id":6,"method":"version"}\n')
assert json.loads(f.readline())["id"] == 6, "the other client is unaffected"
PY
log_has "$WORK/vnetd.log" "disconnected a request line over the size limit" ||
    fail "vnetd did not log the over-long request"

# --- a second vnetd: the same explicit path fails, the default only warns
out=$(timeout 10 "$VNETD" --null --socket-path "$WORK/vm2.sock" --control-socket "$CTL" 2>&1) &&
    fail "a second vnetd took $CTL: $out"
echo "$out" | grep -q "$CTL is in use by a live server" || fail "second vnetd: $out"
if [ ! -e /run/vnetd/vnetd.ctl ]; then
    bg_start --log "$WORK/default1.log" "$VNETD" --null --socket-path "$WORK/d1.sock"
    D1=$BG_PID
    wait_for 10 "vnetd did not open the default control socket" \
        log_has "$WORK/default1.log" "control socket /run/vnetd/vnetd.ctl"
    bg_start --log "$WORK/default2.log" "$VNETD" --null --socket-path "$WORK/d2.sock"
    D2=$BG_PID
    wait_for 10 "the second vnetd at the default path did not warn and go on" \
        log_has "$WORK/default2.log" "running without a control socket"
    wait_for 5 "the second vnetd did not listen" log_has "$WORK/default2.log" "listening on"
    stop_pid "$D2" TERM || fail "second default vnetd exit status $?"
    stop_pid "$D1" TERM || fail "first default vnetd exit status $?"
    [ ! -e /run/vnetd/vnetd.ctl ] || fail "the default control socket outlived its vnetd"
else
    echo "a vnetd on this host holds /run/vnetd/vnetd.ctl: default-path case not run"
fi

stop_pid "$PKTGEN_PID" INT || true
stop_pid "$VNETD_PID" TERM || fail "vnetd exit status $? on SIGTERM"
[ ! -e "$CTL" ] || fail "the control socket outlived vnetd"
final=$(sum_stats "$STATS" "$TAP" tx)
[ "$final" = "$N" ] || fail "final stats $TAP tx $final, expected $N"
pass "control socket: ports, stats = kernel = stats file ($N), errors exact"
