#!/bin/bash
# A QEMU guest on one host and a pod on the other, joined by the kernel's
# VXLAN (issue 11). The two hosts (network namespaces hA and hB, a veth
# underlay, one vnetd each with switch s0 and a VXLAN uplink) are
# lib/vxlan_hosts.sh's, as in test_vxlan_uplink.sh. On hA a TCG guest sits
# on a vhost-user port of s0 (qemu/guest_init.sh vnet_stream=1, QEMU's
# host_mtu=1450 as libvirt's <mtu size='1450'/> sets it); on hB a pod (a
# netns) is attached to s0 by vnetd-cni (iftype tap, host-local IPAM), run
# in hB as the node's runtime would run it. Asserted:
#   - the pod's eth0 has the tunnel's MTU (1450), given by vnetd to a tap
#     on a switch with an uplink; the guest's eth0 has it too;
#   - the guest pings the pod (its stream starts after that) and the pod
#     pings the guest: 3/3;
#   - two checksummed TCP streams (guest -> pod and pod -> guest) cross the
#     tunnel with TSO frames and verify byte for byte (sizes and sha256 at
#     both ends), one connection each way, no eth0 errors in the guest;
#   - each switch learned the other side's MAC behind its uplink port;
#   - the traffic crossed the tunnel once, counted at every hop, both ways:
#     the guest's eth0 against its vnetd port, each switch's ports against
#     each other (what is missing counted as a drop), vnetd's uplink port
#     against its vxtap (each write/read is one frame), the vxtap against
#     the vxlan device (the tc splice), the vxlan devices against the veth
#     underlay, the underlay's two ends against each other (it carries
#     nothing else), and the pod's eth0 against its vnetd port;
#   - CNI DEL removes the pod's port; both vnetd exit 0.
# Usage: test_vxlan_qemu.sh BUILD_DIR   (as root)
# Environment: VNET_QEMU_KERNEL (see guest_kernel), VNET_QEMU_DATA_KIB=4096
# (each stream's size), VNET_KEEP_WORK=1.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PLUGINS=/usr/lib/cni
VNI=4343
HOLD_US=200000
DATA_KIB=${VNET_QEMU_DATA_KIB:-4096}
MAC=52:54:00:43:43:01
# shellcheck disable=SC2034
QEMU_NET_OPTIONS=",host_mtu=1450"
QEMU_TIMEOUT=360
BOOT_WAIT=200  # TCG boots in ~15 s on a quiet machine, far slower on a loaded one
STREAM_WAIT=60

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
qemu_guest_prerequisites
for bin in "$VNETD" "$VNETCTL" "$CNI" "$PLUGINS/host-local"; do
    [ -x "$bin" ] || fail "$bin not there (scripts/install-deps.sh installs containernetworking-plugins)"
done
command -v bridge >/dev/null || fail "bridge (iproute2) not found"

work_dir vnet-vxq
echo "== guest kernel $KVER"
guest_initramfs
# shellcheck source=lib/vxlan_hosts.sh
. "$HERE/lib/vxlan_hosts.sh"
# shellcheck source=lib/qemu_stream.sh
. "$HERE/lib/qemu_stream.sh"
vxlan_hosts_start
vxlan_uplinks_add
ok "uplinks: $VX (vni $VNI) on both hosts"

# ---- the pod on hB, attached by vnetd-cni ---------------------------------------
NET=10.203.0
POD_IP=$NET.10
GUEST_IP=$NET.20
POD=$(ns_name vxpod)
netns_new "$POD"
ip -n "$POD" link set lo up
cat >"$WORK/cni.conf" <<JSON
{"cniVersion": "1.1.0", "name": "vnet-vxq", "type": "vnetd-cni",
 "controlSocket": "$WORK/b.ctl", "stateDir": "$WORK/cni-state", "socketDir": "$WORK/cni-s",
 "host": {"iftype": "tap", "bridge": {"bridgeName": "s0"}},
 "ipam": {"type": "host-local", "subnet": "$NET.0/24", "rangeStart": "$POD_IP", "rangeEnd": "$POD_IP",
          "dataDir": "$WORK/ipam"}}
JSON
# cni_b COMMAND: vnetd-cni as hB's runtime runs it (in hB), for the pod.
cni_b() {
    ip netns exec "$HB" env CNI_COMMAND="$1" CNI_CONTAINERID=pod-vxq CNI_NETNS="/run/netns/$POD" \
        CNI_IFNAME=eth0 CNI_PATH="$PLUGINS" "$CNI" <"$WORK/cni.conf" >"$WORK/cni-$1.out"
}
cni_b ADD || fail "CNI ADD: $(cat "$WORK/cni-ADD.out")"
echo "CNI ADD result: $(cat "$WORK/cni-ADD.out")"
POD_MAC=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["interfaces"][0]["mac"])' \
    "$WORK/cni-ADD.out")
POD_PORT=$(ctl_b --json port list | python3 -c '
import json, sys
print(" ".join(p["name"] for p in json.load(sys.stdin) if p["type"] == "tap"))')
[ -n "$POD_PORT" ] && [ "${POD_PORT// /}" = "$POD_PORT" ] || fail "the pod's port on hB: '$POD_PORT'"
ip -n "$POD" -br addr show eth0 | grep -q " $POD_IP/24" || fail "pod eth0: $(ip -n "$POD" -br addr show eth0)"
POD_MTU=$(ip netns exec "$POD" cat /sys/class/net/eth0/mtu)
[ "$POD_MTU" = 1450 ] || fail "the pod's eth0 has mtu $POD_MTU, not the tunnel's 1450"
ok "pod $POD: eth0 $POD_IP mac $POD_MAC mtu $POD_MTU, port $POD_PORT on hB's s0"

# ---- the guest on hA ---------------------------------------------------------------
L=vm
D="$WORK/vm"
SOCK="$WORK/vm.sock"
HOST_IP=$POD_IP
for f in qemu.log console.txt receiver.out sender.out; do
    fail_log "$D-$f" 25
done
ctl_a port add vhost-user vm --socket-path "$SOCK" --switch s0 >/dev/null || fail "port vm on hA"
start_receiver "$POD"
start_qemu "reconnect=1"
guest_wait 30 "the guest did not connect to vnetd on hA" log_has "$WORK/vnetd-a.log" "front end connected"
guest_wait "$BOOT_WAIT" "the guest's stream did not start" streams_past $((8 * CHUNK)) -1
start_sender "$POD"
ip netns exec "$POD" busybox ping -c 3 -W 5 "$GUEST_IP" >"$WORK/ping.out" 2>&1
PING_RC=$?
cat "$WORK/ping.out"
check "the pod pinged the guest (exit $PING_RC)" test "$PING_RC" = 0
check "3/3 answered" grep -q "3 packets transmitted, 3 packets received" "$WORK/ping.out"
ctl_a mac list --switch s0 >"$WORK/mac-a.txt"
ctl_b mac list --switch s0 >"$WORK/mac-b.txt"
check "hA's s0 learned the pod's $POD_MAC behind uplink-s0" grep -qiE "$POD_MAC +uplink-s0" "$WORK/mac-a.txt"
check "hB's s0 learned the guest's $MAC behind uplink-s0" grep -qiE "$MAC +uplink-s0" "$WORK/mac-b.txt"

finish_streams
check_streams_verified "$QEMU_RC" "$RECEIVER_RC" "$SENDER_RC"
GUEST_MTU=$(guest 'eth0 operstate up mtu ')
check "the guest's eth0 has the tunnel's mtu 1450 (is ${GUEST_MTU:-missing})" test "$GUEST_MTU" = 1450

# ---- every hop -----------------------------------------------------------------------
ctl_a --json stats >"$WORK/stats-a.json" || fail "stats of hA"
ctl_b --json stats >"$WORK/stats-b.json" || fail "stats of hB"
read -r VM_RX VM_TX UPA_RX UPA_TX < <(vnetd_stats "$WORK/stats-a.json" vm.rx.packets vm.tx.packets \
    uplink-s0.rx.packets uplink-s0.tx.packets | xargs)
read -r POD_RX POD_TX UPB_RX UPB_TX < <(vnetd_stats "$WORK/stats-b.json" "$POD_PORT.rx.packets" \
    "$POD_PORT.tx.packets" uplink-s0.rx.packets uplink-s0.tx.packets | xargs)
hop() { link_stat "$1" "$2" "$3"; }
VTA_RX=$(hop "$HA" "$VT" rx_packets) VTA_TX=$(hop "$HA" "$VT" tx_packets)
VXA_RX=$(hop "$HA" "$VX" rx_packets) VXA_TX=$(hop "$HA" "$VX" tx_packets)
UA_RX=$(hop "$HA" "$UA" rx_packets) UA_TX=$(hop "$HA" "$UA" tx_packets)
VTB_RX=$(hop "$HB" "$VT" rx_packets) VTB_TX=$(hop "$HB" "$VT" tx_packets)
VXB_RX=$(hop "$HB" "$VX" rx_packets) VXB_TX=$(hop "$HB" "$VX" tx_packets)
UB_RX=$(hop "$HB" "$UB" rx_packets) UB_TX=$(hop "$HB" "$UB" tx_packets)
PODE_RX=$(hop "$POD" eth0 rx_packets) PODE_TX=$(hop "$POD" eth0 tx_packets)
echo "hops, guest -> pod (packets; GSO frames count once where they stay whole):"
echo "  guest eth0 tx $(guest 'eth0 tx_packets ') | hA vnetd: vm rx $VM_RX, uplink-s0 tx $UPA_TX |" \
    "hA $VT rx $VTA_RX, $VX tx $VXA_TX, $UA tx $UA_TX | hB $UB rx $UB_RX, $VX rx $VXB_RX, $VT tx $VTB_TX |" \
    "hB vnetd: uplink-s0 rx $UPB_RX, $POD_PORT tx $POD_TX | pod eth0 rx $PODE_RX"
echo "hops, pod -> guest:"
echo "  pod eth0 tx $PODE_TX | hB vnetd: $POD_PORT rx $POD_RX, uplink-s0 tx $UPB_TX |" \
    "hB $VT rx $VTB_RX, $VX tx $VXB_TX, $UB tx $UB_TX | hA $UA rx $UA_RX, $VX rx $VXA_RX, $VT tx $VTA_TX |" \
    "hA vnetd: uplink-s0 rx $UPA_RX, vm tx $VM_TX | guest eth0 rx $(guest 'eth0 rx_packets ')"
# Between the guest and the pod a frame can be lost only inside a switch
# (counted under a named drop) or where a device counts it as dropped: each
# hop's count is checked against the next one's.
drops_of() { python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(sum(sum(q[d]["drops"].values()) for p in s["ports"] for q in p["queues"] for d in ("rx", "tx")))' "$1"; }
DROPS_A=$(drops_of "$WORK/stats-a.json")
DROPS_B=$(drops_of "$WORK/stats-b.json")
echo "vnetd drops: hA $DROPS_A, hB $DROPS_B"
# switched FROM TO DROPS: TO <= FROM and what is missing was counted as dropped.
switched() { [ "$2" -le "$1" ] && [ $(($1 - $2)) -le "$3" ]; }
check "the guest's frames all reached vnetd (eth0 tx $(guest 'eth0 tx_packets ') = vm rx $VM_RX)" \
    test "$(guest 'eth0 tx_packets ')" = "$VM_RX"
check "hA's switch: vm rx $VM_RX -> uplink tx $UPA_TX, drops $DROPS_A" switched "$VM_RX" "$UPA_TX" "$DROPS_A"
check "hB's switch: uplink rx $UPB_RX -> pod port tx $POD_TX, drops $DROPS_B" switched "$UPB_RX" "$POD_TX" "$DROPS_B"
check "the pod got what vnetd wrote into its tap ($POD_TX = eth0 rx $PODE_RX)" test "$POD_TX" = "$PODE_RX"
check "the pod's frames all reached vnetd (eth0 tx $PODE_TX = port rx $POD_RX)" test "$PODE_TX" = "$POD_RX"
check "hB's switch: pod port rx $POD_RX -> uplink tx $UPB_TX, drops $DROPS_B" switched "$POD_RX" "$UPB_TX" "$DROPS_B"
check "hA's switch: uplink rx $UPA_RX -> vm tx $VM_TX, drops $DROPS_A" switched "$UPA_RX" "$VM_TX" "$DROPS_A"
check "the guest counted what vnetd put in its ring (vm tx $VM_TX = eth0 rx $(guest 'eth0 rx_packets '))" \
    test "$VM_TX" = "$(guest 'eth0 rx_packets ')"
# Through the tunnel nothing may go missing: every count is the same.
for dir in "hA->hB" "hB->hA"; do
    if [ "$dir" = "hA->hB" ]; then
        set -- "$UPA_TX" "$VTA_RX" "$VXA_TX" "$UA_TX" "$UB_RX" "$VXB_RX" "$VTB_TX" "$UPB_RX"
    else
        set -- "$UPB_TX" "$VTB_RX" "$VXB_TX" "$UB_TX" "$UA_RX" "$VXA_RX" "$VTA_TX" "$UPA_RX"
    fi
    check "$dir: the sender's uplink port wrote what its vxtap received ($1 = $2)" test "$1" = "$2"
    check "$dir: the vxtap's frames went into the vxlan device ($2 = $3)" test "$2" = "$3"
    check "$dir: the vxlan device's packets are the underlay's ($3 = $4)" test "$3" = "$4"
    check "$dir: the underlay delivered each once ($4 sent = $5 received)" test "$4" = "$5"
    check "$dir: the receiving vxlan device decapsulated them all ($5 = $6)" test "$5" = "$6"
    check "$dir: ... and its vxtap handed them to vnetd ($6 = $7 = uplink rx $8)" test "$6" = "$7" -a "$7" = "$8"
    check "$dir: the stream's traffic did cross ($1 > 0)" test "$1" -gt 0
done

# ---- CNI DEL, the end ----------------------------------------------------------------
cni_b DEL || fail "CNI DEL: $(cat "$WORK/cni-DEL.out")"
ctl_b port list | grep -q "^$POD_PORT " && FAILS+=("CNI DEL left port $POD_PORT on hB")
vxlan_hosts_stop

if [ ${#FAILS[@]} -gt 0 ]; then
    printf 'FAILED: %s\n' "${FAILS[@]}"
    fail "${#FAILS[@]} check(s) failed"
fi
echo "stream guest -> pod: $SEND_SIZE bytes sha256 $SEND_SHA, received $RECV_SIZE sha256 $RECV_SHA"
echo "stream pod -> guest: $IN_SIZE bytes sha256 $IN_SHA, received $IN_RECV_SIZE sha256 $IN_RECV_SHA"
pass "vxlan + QEMU: a guest on hA and a CNI pod on hB, pings and verified streams across the tunnel, every hop counted"
