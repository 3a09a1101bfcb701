#!/bin/bash
# Re-reading the config file at run time (SIGHUP and vnetctl reload):
#
#   - vnetd --config FILE boots vm0 <-> tap T0; the file gains vm1 <-> T1
#     and busy_poll_us: SIGHUP adds both ports (port list), vnet-pktgen sends
#     exactly M frames into vm1 and T1's kernel counters see M, and the
#     stats' datapath says busy_poll_us = 25;
#   - the file changes tx_batch and vm0's socket_path: `vnetctl reload`
#     fails with the exact reasons, SIGHUP logs them, vnetd keeps running and
#     nothing changed (port list, datapath);
#   - the file goes back to the boot version: vnetctl reload removes vm1 and
#     T1 (their socket and tap are gone); a port added with vnetctl (not in
#     the file) stays through every reload;
#   - a file that does not parse: refused with the file and line, nothing
#     changed;
#   - a reload that fails part-way (vm1 <-> T1 removed, vm2 added, then
#     vm3's socket cannot be bound): the exact error, every step undone (the
#     pair back and cross-connected, frames through it, vm2's socket gone);
#   - vnetd exits 0 at the end;
#   - --config with a one-pair flag (--tap) is refused at start-up.
#
# Usage: test_reload.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
M=3000

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (netns, taps)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnet-reload
NS=$(ns_name vrel)
netns_new "$NS"
T0=$(link_name vrl0)
T1=$(link_name vrl1)
CTL="$WORK/vnetd.ctl"
CONF="$WORK/vnetd.toml"
fail_log "$WORK/vnetd.log" 30

# write_config [EXTRA-DATAPATH-LINE] [SECOND-PAIR=0|1] [VM0-SOCKET]
write_config() {
    cat >"$CONF" <<TOML
[daemon]
control_socket = "$CTL"

[datapath]
${1:-}

[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "${3:-$WORK/vm0.sock}"

[[port]]
name = "$T0"
type = "tap"

[[connect]]
ports = ["vm0", "$T0"]
TOML
    if [ "${2:-0}" = 1 ]; then
        cat >>"$CONF" <<TOML

[[port]]
name = "vm1"
type = "vhost-user"
socket_path = "$WORK/vm1.sock"

[[port]]
name = "$T1"
type = "tap"

[[connect]]
ports = ["vm1", "$T1"]
TOML
    fi
}
port_names() { ctl --json port list | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))'; }
datapath() { ctl --json stats | python3 -c "import json,sys; print(json.load(sys.stdin)['datapath']['$1'])"; }

write_config
# A config file names its own ports: the one-pair flags beside it are refused.
out=$("$VNETD" --config "$CONF" --tap x 2>&1) && fail "--config with --tap started: $out"
[[ "$out" == *"--config excludes --tap"* ]] || fail "--config with --tap: '$out'"
start_vnetd "$WORK/vnetd.log" --netns "$NS" --config "$CONF"
wait_control
[ "$(port_names)" = "vm0 $T0" ] || fail "boot ports: $(port_names)"
ctl port add null extra >/dev/null || fail "port add null extra"

# ---- SIGHUP adds a pair and changes a run-time knob ---------------------------
write_config "busy_poll_us = 25" 1
kill -HUP "$VNETD_PID"
wait_for 10 "SIGHUP did not add vm1 and $T1" log_has "$WORK/vnetd.log" "SIGHUP: reloaded"
[ "$(port_names)" = "vm0 $T0 extra vm1 $T1" ] || fail "ports after SIGHUP: $(port_names)"
log_has "$WORK/vnetd.log" "SIGHUP: reloaded the config: added ports vm1, $T1; options busy_poll_us=25" ||
    fail "SIGHUP's reload not logged in words: $(grep 'SIGHUP' "$WORK/vnetd.log")"
check_equal "busy_poll_us after SIGHUP" "want=25" "stats=$(datapath busy_poll_us)"
ip -n "$NS" link set "$T1" up || fail "$T1 (added by SIGHUP) is not in the netns"
"$PKTGEN" --socket-path "$WORK/vm1.sock" --tx --count "$M" --rate 20000 --size 64 \
    --stats-interval 0 --connect-timeout 10 >"$WORK/pktgen.log" 2>&1 || fail "pktgen into vm1"
t1_received() { [ $(($(link_stat "$NS" "$T1" rx_packets) + $(link_stat "$NS" "$T1" rx_dropped))) = "$M" ]; }
wait_for 10 "$T1 did not receive $M frames" t1_received
ok "SIGHUP added vm1 <-> $T1 ($M frames through it) and set busy_poll_us 25"

# ---- refused: all of it, with every reason --------------------------------------
write_config $'busy_poll_us = 25\ntx_batch = 32' 1 "$WORK/elsewhere.sock"
WANT="vnetctl: reload refused, nothing changed: tx_batch changed (64 -> 32): it takes a restart; port 'vm0' changed (socket_path): remove it from the file and reload, then add it back"
out=$(ctl reload 2>&1) && fail "a refused reload succeeded: $out"
[ "$out" = "$WANT" ] || fail "reload refusal: '$out'"
kill -HUP "$VNETD_PID"
wait_for 10 "SIGHUP did not log the refusal" log_has "$WORK/vnetd.log" "SIGHUP: reload refused"
running "$VNETD_PID" || fail "vnetd died on a refused SIGHUP"
[ "$(port_names)" = "vm0 $T0 extra vm1 $T1" ] || fail "a refused reload changed the ports: $(port_names)"
check_equal "tx_batch after the refusal" "want=64" "stats=$(datapath tx_batch)"
ok "refused as a whole: $out"

printf 'this is [not toml\n' >"$CONF"
out=$(ctl reload 2>&1) && fail "a broken file reloaded: $out"
[[ "$out" == "vnetctl: $CONF:1:"*": "* ]] || fail "broken file (want FILE:LINE:COLUMN): '$out'"
[ "$(port_names)" = "vm0 $T0 extra vm1 $T1" ] || fail "a broken file changed the ports"
ok "a file that does not parse: $out"

# ---- a step fails part-way: what it did is undone --------------------------------
# The file drops the vm1 <-> T1 pair and adds vm2 (fine) and vm3, whose
# socket "directory" is a file (a missing one would be made): vm1 and T1 are removed and vm2 added
# before vm3 fails, then all three steps are undone, the pair cross-connected
# again.
write_config "busy_poll_us = 25"
: >"$WORK/not-a-dir"
cat >>"$CONF" <<TOML

[[port]]
name = "vm2"
type = "vhost-user"
socket_path = "$WORK/vm2.sock"

[[port]]
name = "vm3"
type = "vhost-user"
socket_path = "$WORK/not-a-dir/vm3.sock"
TOML
out=$(ctl reload 2>&1) && fail "a reload with an unbindable socket succeeded: $out"
WANT="vnetctl: reload failed, rolled back: port 'vm3': "
[[ "$out" == "$WANT"*"$WORK/not-a-dir/vm3.sock"* ]] || fail "part-way failure: '$out'"
[[ "$out" != *"not restored"* ]] || fail "the rollback was incomplete: '$out'"
[ "$(port_names)" = "vm0 $T0 extra vm1 $T1" ] || fail "ports after the rolled-back reload: $(port_names)"
[ ! -e "$WORK/vm2.sock" ] || fail "vm2's socket outlived the rollback"
[ -S "$WORK/vm1.sock" ] || fail "vm1's socket was not made again"
peer_of() { ctl --json port list | python3 -c "import json,sys; print([p.get('peer', '') for p in json.load(sys.stdin) if p['name'] == '$1'][0])"; }
check_equal "vm1's peer after the rollback" "want=$T1" "list=$(peer_of vm1)"
log_has "$WORK/vnetd.log" "reload rolled back$" || fail "vnetd did not log the rollback"
ip -n "$NS" link set "$T1" up || fail "$T1 was not made again in the netns"
"$PKTGEN" --socket-path "$WORK/vm1.sock" --tx --count "$M" --rate 20000 --size 64 \
    --stats-interval 0 --connect-timeout 10 >"$WORK/pktgen2.log" 2>&1 || fail "pktgen into vm1 after the rollback"
wait_for 10 "$T1 did not receive $M frames after the rollback" t1_received
ok "a reload that failed part-way was undone, vm1 <-> $T1 forwards again: $out"

# ---- back to the boot file: the pair goes, vnetctl's port stays ---------------
write_config "busy_poll_us = 25"
out=$(ctl reload) || fail "reload to the boot file: $out"
[ "$(port_names)" = "vm0 $T0 extra" ] || fail "ports after reload: $(port_names)"
[ ! -e "$WORK/vm1.sock" ] || fail "vm1's socket outlived the reload"
tap_gone() { ! ip -n "$NS" link show "$T1" >/dev/null 2>&1; }
wait_for 10 "$T1 outlived the reload" tap_gone
ok "reload removed vm1 and $T1; vnetctl's port stayed: $(echo "$out" | tr '\n' ' ')"

stop_pid "$VNETD_PID" TERM || fail "vnetd exit status $? on SIGTERM"
pass "SIGHUP and vnetctl reload: added, refused whole with reasons, removed"
