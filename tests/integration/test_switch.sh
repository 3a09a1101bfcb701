#!/bin/bash
# Four front ends on one vnetd L2 switch: two vnet-pktgen guests (a, b),
# DPDK testpmd virtio-user in rxonly (pmd) and a tap in a network namespace.
# Every count is exact:
#   (1) learning: b sends 1 broadcast frame from MAC_B (a is not connected
#       yet): pmd and the tap get it, the switch learns MAC_B on b.
#   (2) unicast after learning: a sends N frames to MAC_B: b receives N,
#       verified; pmd and the tap get nothing more.
#   (3) broadcast: a sends M frames to ff:ff:ff:ff:ff:ff: b, pmd and the
#       tap each receive M.
#   Then vnetctl: mac list shows MAC_A on a and MAC_B on b; switch list
#   counts learned 2, flooded 1 + M, and no drop of any reason; vnetd's
#   stats: a rx N + M, b tx N + M, pmd tx 1 + M, tap tx 1 + M, no drops.
#   (4) VLANs: a second switch with access ports on VLAN 10 (c, d) and 20
#       (e): a broadcast from c reaches d only.
# A switch drops at a full destination after a bounded hold
# (destination_full) where a cross-connect would wait: rates are paced and
# the hold is long (HOLD_US) so that no frame is dropped here.
#
# Usage: test_switch.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_FRAMES  N and M (default 20000)
set -u

TESTPMD=$(command -v dpdk-testpmd || true)
N=${VNET_TEST_FRAMES:-20000}
M=$N
RATE=50000
# A receiving vnet-pktgen on a busy machine may not run for milliseconds:
# the switch holds frames for it (and waits with the source) up to 200 ms
# rather than the default 100 us, so the counts stay exact.
HOLD_US=200000

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap, DPDK EAL)"
[ -n "$TESTPMD" ] || skip "dpdk-testpmd not found (Debian package dpdk)"
need_commands ip python3 timeout
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnetd-switch
NS_HOST=$(ns_name vsw-host)
NS_TAP=$(ns_name vsw-tap)
netns_new "$NS_HOST"
netns_new "$NS_TAP"
TAP=$(link_name vsw t)
CTL="$WORK/ctl.sock"
STATS="$WORK/vnetd.json"
MAC_A=02:00:00:00:0a:0a
MAC_B=02:00:00:00:0b:0b
MAC_C=02:00:00:00:0c:0c
BROADCAST=ff:ff:ff:ff:ff:ff

cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$CTL"
stats_file = "$STATS"
[[switch]]
name = "s0"
destination_hold_us = $HOLD_US
[[switch]]
name = "v"
destination_hold_us = $HOLD_US
[[port]]
name = "a"
type = "vhost-user"
socket_path = "$WORK/a.sock"
switch = "s0"
allowed_macs = ["$MAC_A"]
[[port]]
name = "b"
type = "vhost-user"
socket_path = "$WORK/b.sock"
switch = "s0"
[[port]]
name = "pmd"
type = "vhost-user"
socket_path = "$WORK/pmd.sock"
switch = "s0"
[[port]]
name = "$TAP"
type = "tap"
switch = "s0"
[[port]]
name = "c"
type = "vhost-user"
socket_path = "$WORK/c.sock"
switch = "v"
vlan = 10
[[port]]
name = "d"
type = "vhost-user"
socket_path = "$WORK/d.sock"
switch = "v"
vlan = 10
[[port]]
name = "e"
type = "vhost-user"
socket_path = "$WORK/e.sock"
switch = "v"
vlan = 20
TOML

# vnetd in NS_HOST (IPv6 off): the kernel sends nothing through the tap
# before it is moved into NS_TAP (IPv6 off too), so every frame it counts is ours.
start_vnetd "$WORK/vnetd.log" --netns "$NS_HOST" --config "$WORK/vnetd.toml"
wait_for 10 "vnetd did not listen" log_count "$WORK/vnetd.log" "listening on" 6
ip -n "$NS_HOST" link set "$TAP" netns "$NS_TAP" || fail "moving $TAP into $NS_TAP"
ip -n "$NS_TAP" link set "$TAP" up || fail "$TAP up in $NS_TAP"

dpdk_eal pmd "0@0,1@$LAST_CPU"
bg_start --log "$WORK/testpmd.log" stdbuf -oL "$TESTPMD" "${EAL_ARGS[@]}" \
    --vdev "net_virtio_user0,queues=1,queue_size=256,mac=02:00:00:00:0d:0d,path=$WORK/pmd.sock" \
    -- --nb-cores=1 --rxq=1 --txq=1 --rxd=256 --txd=256 --total-num-mbufs=16384 \
    --forward-mode=rxonly --stats-period 1
TESTPMD_PID=$BG_PID
wait_for 30 "testpmd did not start forwarding" log_has "$WORK/testpmd.log" "Port statistics"

pktgen() { timeout 120 "$PKTGEN" --connect-timeout 20 "$@"; }
# start_rx LABEL SOCK: a receiving vnet-pktgen in the background (RX_PID).
start_rx() {
    bg_start --out "$WORK/rx-$1.out" --err "$WORK/rx-$1.log" "$PKTGEN" --connect-timeout 20 \
        --socket-path "$2" --rx
    RX_PID=$BG_PID
    wait_for 20 "($1) receiving vnet-pktgen did not come up" log_has "$WORK/rx-$1.log" "link up"
}
# stop_rx LABEL: after the senders are done; its counts are then final.
stop_rx() {
    sleep 1
    stop_pid "$RX_PID" INT
}
tap_rx() { link_stat "$NS_TAP" "$TAP" rx_packets; }
tap_rx_is() { [ "$(tap_rx)" = "$1" ]; }
pmd_rx() {  # testpmd's RX-packets, from its latest once-a-second port stats
    grep -oE "RX-packets: *[0-9]+" "$WORK/testpmd.log" | tail -n 1 | grep -oE '[0-9]+$'
}
pmd_rx_is() { [ "$(pmd_rx)" = "$1" ]; }

echo "== (1) learning: b broadcasts one frame from $MAC_B"
pktgen --socket-path "$WORK/b.sock" --tx --count 1 --src-mac "$MAC_B" --dst-mac "$BROADCAST" \
    >"$WORK/tx-1.out" 2>"$WORK/tx-1.log" || fail "(1) vnet-pktgen b failed"
wait_for 5 "(1) the tap did not get the broadcast" tap_rx_is 1
wait_for 5 "(1) testpmd did not get the broadcast" pmd_rx_is 1
ok "(1) pmd and the tap got b's broadcast"

echo "== (2) unicast after learning: a sends $N frames to $MAC_B"
start_rx 2 "$WORK/b.sock"
pktgen --socket-path "$WORK/a.sock" --tx --count "$N" --rate "$RATE" --src-mac "$MAC_A" \
    --dst-mac "$MAC_B" >"$WORK/tx-2.out" 2>"$WORK/tx-2.log" || fail "(2) vnet-pktgen a failed"
stop_rx 2
check_equal 2 "a_tx=$(pktgen_value "$WORK/tx-2.out" tx-packets)" \
    "b_rx=$(pktgen_value "$WORK/rx-2.out" rx-packets)" "N=$N"
check_equal 2 "b_rx_verified=$(pktgen_value "$WORK/rx-2.out" rx-verified)" "N=$N"
check_equal 2 "tap_rx=$(tap_rx)" "pmd_rx=$(pmd_rx)" "one=1"

echo "== (3) broadcast: a sends $M frames to $BROADCAST"
start_rx 3 "$WORK/b.sock"
pktgen --socket-path "$WORK/a.sock" --tx --count "$M" --rate "$RATE" --src-mac "$MAC_A" \
    --dst-mac "$BROADCAST" >"$WORK/tx-3.out" 2>"$WORK/tx-3.log" || fail "(3) vnet-pktgen a failed"
stop_rx 3
wait_until 5 pmd_rx_is $((1 + M))
check_equal 3 "a_tx=$(pktgen_value "$WORK/tx-3.out" tx-packets)" \
    "b_rx=$(pktgen_value "$WORK/rx-3.out" rx-packets)" "M=$M"
check_equal 3 "tap_rx=$(tap_rx)" "pmd_rx=$(pmd_rx)" "1+M=$((1 + M))"

echo "== vnetctl on the switch"
"$VNETCTL" --socket "$CTL" mac list --switch s0 || fail "vnetctl mac list failed"
"$VNETCTL" --socket "$CTL" switch list || fail "vnetctl switch list failed"
"$VNETCTL" --socket "$CTL" --json mac list --switch s0 >"$WORK/macs.json" || fail "mac list --json"
"$VNETCTL" --socket "$CTL" --json switch list >"$WORK/switches.json" || fail "switch list --json"
python3 - "$WORK/macs.json" "$WORK/switches.json" "$MAC_A" "$MAC_B" "$M" <<'PY' || fail "vnetctl's switch view"
import json, sys
macs, switches = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
mac_a, mac_b, m = sys.argv[3], sys.argv[4], int(sys.argv[5])
where = {(e["mac"], e["vlan"]): e["port"] for e in macs}
assert where == {(mac_a, 1): "a", (mac_b, 1): "b"}, where
s0 = next(s for s in switches if s["name"] == "s0")
c = s0["counters"]
assert (c["learned"], c["moved"], c["aged"], c["table_full"], c["flooded"]) == (2, 0, 0, 0, 1 + m), c
assert sum(c["drops"].values()) == 0, c["drops"]
assert s0["mac_entries"] == 2 and s0["mac_table_size"] == 8192 and s0["mac_aging_s"] == 300, s0
print("ok: mac list and switch list agree with what was sent")
PY

echo "== (4) VLANs: c (VLAN 10) broadcasts; d (VLAN 10) gets it, e (VLAN 20) does not"
start_rx 4d "$WORK/d.sock"
RX_D=$RX_PID
start_rx 4e "$WORK/e.sock"
RX_E=$RX_PID
pktgen --socket-path "$WORK/c.sock" --tx --count "$M" --rate "$RATE" --src-mac "$MAC_C" \
    --dst-mac "$BROADCAST" >"$WORK/tx-4.out" 2>"$WORK/tx-4.log" || fail "(4) vnet-pktgen c failed"
sleep 1
stop_pid "$RX_D" INT
stop_pid "$RX_E" INT
check_equal 4 "c_tx=$(pktgen_value "$WORK/tx-4.out" tx-packets)" \
    "d_rx=$(pktgen_value "$WORK/rx-4d.out" rx-packets)" "M=$M"
check_equal 4 "e_rx=$(pktgen_value "$WORK/rx-4e.out" rx-packets)" "zero=0"

stop_pid "$TESTPMD_PID" INT
stop_pid "$VNETD_PID" TERM || fail "vnetd exited with status $? on SIGTERM"
read -r a_rx a_drops b_tx b_drops pmd_tx pmd_drops tap_tx tap_drops < <(vnetd_stats "$STATS" \
    a.rx.packets a.rx.drops b.tx.packets b.tx.drops pmd.tx.packets pmd.tx.drops \
    "$TAP.tx.packets" "$TAP.tx.drops")
check_equal stats "vnetd_a_rx=$a_rx" "vnetd_b_tx=$b_tx" "N+M=$((N + M))"
check_equal stats "vnetd_pmd_tx=$pmd_tx" "vnetd_tap_tx=$tap_tx" "1+M=$((1 + M))"
check_equal stats "drops=$((a_drops + b_drops + pmd_drops + tap_drops))" "zero=0"
pass
