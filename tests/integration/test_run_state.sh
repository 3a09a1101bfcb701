#!/bin/bash
# The run-time state file ([daemon] state_file, docs/USAGE.md "Run-time
# state"): what vnetctl added comes back when vnetd is killed and started
# again, and the guests' front ends find their ports again.
#
#   - vnetd (in its own netns, for the vxlan devices) with state_file and a
#     [[switch]] s0 of its config; vnetctl adds switch s1 (mac_aging_s 60),
#     ports a and b on it (vlan 7; b also ingress_policing_rate 50000), a
#     vxlan uplink on s1 with one peer more (uplink peer add), port c
#     (deleted again) and port.set's burst on a: the file lists exactly s1,
#     a, b, the uplink, with those keys (nothing of the config file's);
#   - a vnet-pktgen --tx --reconnect on a and on b; SIGKILL vnetd, start it
#     again at once: switch s1 (aging 60), a and b (members, access vlan 7)
#     are back, c is not, b's policing rate is 50000 (port.set answers it),
#     both pktgens reconnected (tx-reconnects 1) and frames flow again;
#   - vnetctl upgrade: the successor re-creates a and b from the file on
#     the fds handed over (none "not taken over", none "built afresh"),
#     once; both pktgens reconnect again; the old vnetd exits 0;
#   - the uplink: its kernel device outlived the killed vnetd; marked as
#     vnetd's (its alias), it is deleted and made again, with one warning,
#     and the uplink is back with its two peers; it is removed before the
#     upgrade (an uplink is not handed over);
#   - a state file that does not parse: the exact error line, the file set
#     aside as state.json.bad, vnetd starts without it; vnetd exits 0.
# Usage: test_run_state.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
VNI=4343

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnetd-run-state
NS=$(ns_name rst)
netns_new "$NS"
UNDERLAY=$(link_name rsu)
# A veth pair with both ends in the netns: the tunnel's source address.
ip -n "$NS" link add "$UNDERLAY" type veth peer name "${UNDERLAY}p" &&
    ip -n "$NS" addr add 10.203.0.1/24 dev "$UNDERLAY" &&
    ip -n "$NS" link set "$UNDERLAY" up && ip -n "$NS" link set "${UNDERLAY}p" up ||
    fail "underlay $UNDERLAY in $NS"
STATE="$WORK/state.json"
CTL="$WORK/control.sock"
cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$CTL"
state_file = "$STATE"

[[switch]]
name = "s0"
TOML

# start_vnetd_answering LOG: vnetd of vnetd.toml in NS, logging to LOG,
# until its control socket answers; VNETD_PID.
start_vnetd_answering() {
    start_vnetd "$1" --netns "$NS" --config "$WORK/vnetd.toml"
    wait_for 20 "vnetd did not open its control socket: $(tail -n 3 "$1")" ctl version
}

start_vnetd_answering "$WORK/vnetd-0.log"
log_has "$WORK/vnetd-0.log" "state file $STATE: none yet" || fail "no 'none yet' line"
ctl switch add s1 --mac-aging-s 60 >/dev/null || fail "switch add s1"
ctl port add vhost-user a --socket-path "$WORK/a.sock" --switch s1 --vlan 7 >/dev/null ||
    fail "port add a"
ctl port add vhost-user b --socket-path "$WORK/b.sock" --switch s1 --vlan 7 \
    --set ingress_policing_rate=50000 >/dev/null || fail "port add b"
ctl port add vhost-user c --socket-path "$WORK/c.sock" --switch s1 >/dev/null || fail "port add c"
out=$(ctl switch uplink add s1 vxlan --vni "$VNI" --local 10.203.0.1 --remote 10.203.0.2 2>&1) ||
    fail "uplink add: $out"
ctl switch uplink peer add s1 10.203.0.3 >/dev/null || fail "uplink peer add"
ctl port del c >/dev/null || fail "port del c"
ctl port set a --ingress-policing-burst 16000 >/dev/null || fail "port set a"
python3 - "$STATE" "$WORK" <<'PY' || fail "state file after the changes: $(cat "$STATE")"
import json, sys
state = json.load(open(sys.argv[1]))
work = sys.argv[2]
assert state["version"] == 1, state
assert state["switches"] == [{"name": "s1", "settings": {"mac_aging_s": "60"}}], state["switches"]
ports = {p["name"]: p for p in state["ports"]}
assert [p["name"] for p in state["ports"]] == ["a", "b", "uplink-s1"], state["ports"]
assert ports["a"] == {"name": "a", "type": "vhost-user", "settings": {
    "socket_path": work + "/a.sock", "ingress_policing_burst": "16000", "switch": "s1",
    "vlan": "7"}}, ports["a"]
assert ports["b"]["settings"]["ingress_policing_rate"] == "50000", ports["b"]
assert ports["uplink-s1"]["type"] == "vxlan", ports["uplink-s1"]
s = ports["uplink-s1"]["settings"]
assert (s["vni"], s["vxlan_remote"], s["switch"]) == ("4343", "10.203.0.2,10.203.0.3", "s1"), s
print("ok: the state file lists s1, a, b, uplink-s1 with their keys, not s0 nor c")
PY
[ -e "$STATE.tmp" ] && fail "a temporary state file was left behind"

MAC_A=02:00:00:00:0a:0a
MAC_B=02:00:00:00:0b:0b
bg_start --out "$WORK/pktgen-b.out" --err "$WORK/pktgen-b.err" "$PKTGEN" \
    --socket-path "$WORK/b.sock" --tx --reconnect --rate 1 --connect-timeout 20 --stats-interval 0 \
    --src-mac "$MAC_B" --dst-mac "$MAC_A"
PKTGEN_B=$BG_PID
bg_start --out "$WORK/pktgen-a.out" --err "$WORK/pktgen-a.err" "$PKTGEN" \
    --socket-path "$WORK/a.sock" --tx --reconnect --rate 2000 --connect-timeout 20 \
    --stats-interval 0 --drain-timeout 1 --src-mac "$MAC_A" --dst-mac "$MAC_B"
PKTGEN_A=$BG_PID
for p in a b; do
    wait_for 20 "pktgen $p did not connect" log_has "$WORK/vnetd-0.log" "\[[^]]*${p}[^]]*\] vring 1: inflight"
done
sleep 1

kill -KILL "$VNETD_PID"
{ wait "$VNETD_PID"; } 2>/dev/null
forget "$VNETD_PID"
LOG="$WORK/vnetd-1.log"
start_vnetd_answering "$LOG"
ok "vnetd killed and started again"

for item in "switch s1" "port a" "port b"; do
    log_has "$LOG" "state file: $item re-created" ||
        fail "no '$item re-created' line: $(grep 'state file' "$LOG")"
done
log_has "$LOG" "state file: port uplink-s1 re-created" ||
    fail "the uplink was not re-created: $(grep 'state file' "$LOG")"
[ "$(grep -c "port uplink-s1: vxlan$VNI was left by a vnetd that died: deleted and made again" "$LOG")" = 1 ] ||
    fail "not one warning for the leftover vxlan$VNI: $(grep 'uplink-s1' "$LOG")"
log_has "$LOG" "state file $STATE: 4 of 4 item\(s\) re-created" ||
    fail "no summary line: $(grep 'state file' "$LOG")"
for p in a b; do
    log_has "$LOG" "switch s1: port $p is member [0-9]+ \(access vlan 7\)" || fail "$p is not back on vlan 7"
done
ok "switch s1, a and b back (vlan 7), the uplink made again over its leftover device"

ctl --json port list >"$WORK/ports.json" || fail "port list"
ctl --json switch list >"$WORK/switches.json" || fail "switch list"
python3 - "$WORK/ports.json" "$WORK/switches.json" <<'PY' || fail "ports or switches after the restart"
import json, sys
ports = json.load(open(sys.argv[1]))
switches = json.load(open(sys.argv[2]))
assert [p["name"] for p in ports] == ["a", "b", "uplink-s1"], ports
assert ports[2]["remotes"] == ["10.203.0.2", "10.203.0.3"], ports[2]
assert [(s["name"], s["mac_aging_s"], s["ports"]) for s in switches] == [
    ("s0", 300, []), ("s1", 60, ["a", "b", "uplink-s1"])], switches
print("ok: port list a b uplink-s1 (two peers; no c), switch list s0 and s1 (aging 60)")
PY
out=$(ctl --json port set b --ingress-policing-burst 8000) || fail "port set b: $out"
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["ingress_policing_rate"] == 50000, j' "$out" ||
    fail "b's policing rate did not come back: $out"
ok "b's ingress_policing_rate 50000 came back"

for p in a b; do
    wait_for 30 "pktgen $p did not come back" log_has "$LOG" "\[[^]]*${p}[^]]*\] vring 1: inflight"
done
# Frames a sent into the new vnetd: its stats count them.
rx_a() {
    ctl --json stats | python3 -c 'import json, sys
s = json.load(sys.stdin)
print(sum(q["rx"]["packets"] for p in s["ports"] if p["name"] == "a" for q in p["queues"]))'
}
before=$(rx_a) || fail "stats: $before"
sleep 1
after=$(rx_a) || fail "stats: $after"
[ "$after" -gt "$before" ] || fail "no frames from a after the restart ($before -> $after)"
ok "frames from a flow again ($before -> $after)"

# ---- upgrade in place: the successor re-creates the state's ports on the
# fds handed over, once (they are not in its config file either). An
# uplink is not handed over: it goes first.
ctl switch uplink del s1 >/dev/null || fail "uplink del"
python3 -c 'import json, sys; assert [p["name"] for p in json.load(open(sys.argv[1]))["ports"]] == ["a", "b"]' \
    "$STATE" || fail "uplink del did not rewrite the state file without the uplink: $(cat "$STATE")"
out=$(ctl upgrade) || fail "upgrade: $out"
wait_for 20 "vnetd did not log the take-over" log_has "$LOG" "upgrade: pid [0-9]+ took over"
NEW_PID=$(grep -m 1 -oE "upgrade: pid [0-9]+ took over" "$LOG" | awk '{print $3}')
on_exit kill -KILL "$NEW_PID"
wait_until 20 exited "$VNETD_PID" || fail "the old vnetd did not exit after the upgrade"
old_rc=0
{ wait "$VNETD_PID" || old_rc=$?; } 2>/dev/null
forget "$VNETD_PID"
check_equal "the upgraded vnetd's exit status" expected=0 status="$old_rc"
log_has "$LOG" "state file $STATE: 3 of 3 item\(s\) re-created" ||
    fail "the successor did not re-create s1, a and b: $(grep 'state file' "$LOG")"
log_has "$LOG" "not in our config: not taken over|built afresh" &&
    fail "the successor did not take a state port over: $(grep -E 'not taken over|afresh' "$LOG")"
[ "$(ctl --json port list | python3 -c 'import json, sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))')" = "a b" ] ||
    fail "ports after the upgrade: $(ctl --json port list)"
for p in a b; do
    wait_for 30 "pktgen $p did not come back after the upgrade" \
        log_count "$LOG" "\[[^]]*${p}[^]]*\] vring 1: inflight" 2
done
ok "upgrade in place: pid $NEW_PID took a and b over from the state file, once"

stop_pid "$PKTGEN_A" INT || fail "pktgen a exit status $?: $(tail -n 3 "$WORK/pktgen-a.err")"
stop_pid "$PKTGEN_B" INT || fail "pktgen b exit status $?: $(tail -n 3 "$WORK/pktgen-b.err")"
for p in a b; do
    check_equal "pktgen $p reconnects (kill, upgrade)" expected=2 \
        tx-reconnects="$(pktgen_value "$WORK/pktgen-$p.out" tx-reconnects)"
done
kill -TERM "$NEW_PID"
wait_until 10 test ! -e "/proc/$NEW_PID" || fail "the new vnetd did not exit on SIGTERM"

# ---- a state file that does not parse ----------------------------------------
echo '{"version": 1, "ports": [' >"$STATE"
LOG="$WORK/vnetd-2.log"
start_vnetd_answering "$LOG"
log_has "$LOG" "state file $STATE does not parse \(not JSON\): set aside as $STATE.bad; starting without it" ||
    fail "no set-aside line: $(grep 'state file' "$LOG")"
[ -e "$STATE.bad" ] && [ ! -e "$STATE" ] || fail "the bad file was not set aside"
[ "$(ctl --json port list)" = "[]" ] || fail "ports from a bad state file: $(ctl --json port list)"
stop_pid "$VNETD_PID" || fail "vnetd exit status $?"
pass "run-time switches and ports survive SIGKILL; a bad state file is set aside"
