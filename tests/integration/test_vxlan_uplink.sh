#!/bin/bash
# Two hosts joined by the kernel's VXLAN (issue 11): two network
# namespaces hA and hB stand for two hosts, a veth pair between them is the
# underlay (10.201.0.1 and .2, static neighbours and no IPv6, so it carries
# only the tunnel's packets). One vnetd runs in each with switch s0, a
# vnet-pktgen guest on it, and a VXLAN uplink made with vnetctl
# (`switch uplink add s0 vxlan --vni 4242 --local ... --remote ...`):
#   - broadcast from b (on hB) reaches a (on hA): exactly N frames at every
#     hop: b's vnetd port, its uplink port, hB's vxtap and vxlan devices,
#     the veth both ways (N UDP datagrams, nothing else), hA's vxlan and
#     vxtap, hA's uplink port, a's port, a's vnet-pktgen (all verified);
#     hA's switch learned b's MAC behind its uplink;
#   - unicast a -> b after that: N frames to b, each crossing the tunnel
#     once (veth N), and hA's kernel learned b's MAC behind 10.201.0.2;
#   - the guests are offered the tunnel's MTU (1450) unless their port
#     says otherwise;
#   - `switch uplink peer del` on hA stops the flow: a's next N frames are
#     written to the uplink and dropped by hA's vxlan device (tx_dropped
#     N), the veth carries nothing, b gets nothing; the learned MAC behind
#     the removed peer is gone; peer add brings the flow back;
#   - errors are exact: a second uplink on s0, an uplink on an unknown
#     switch, a bad address, a peer twice, removing a peer that is not
#     there, peer add on a switch without uplink, a vxlan device of the
#     uplink's name that vnetd did not make (left as it was);
#   - `switch uplink del` removes the port and both kernel devices and
#     their tc programs;
#   - then the socket datapath (`--datapath socket`, vnetd's own UDP
#     socket): no kernel device; port list, show and stats say socket;
#     broadcast b -> a and unicast a -> b arrive, N each, verified byte for
#     byte by the receiving vnet-pktgen; peer del stops the flow (nothing
#     on the veth), peer add brings it back; a TCP stream of 16 MiB
#     between two pods (a tap on each switch, in a namespace of its own)
#     arrives whole (length and sha256: the receiving stack trusts the
#     merged frames' partial checksum), and the receiving uplink merged
#     segments on the way (gro frames > 0, at least two segments each);
#     both vnetd exit 0.
# The hosts and their vnetd: lib/vxlan_hosts.sh; test_vxlan_qemu.sh runs a
# QEMU guest and a CNI pod across the same tunnel.
# Usage: test_vxlan_uplink.sh BUILD_DIR   (as root)
#   VNET_TEST_FRAMES N (default 2000)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-2000}
RATE=20000
VNI=4242
HOLD_US=200000  # a receiving vnet-pktgen on a busy machine may not run for a while

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
# shellcheck source=lib/tcp_stream.sh
. "$HERE/lib/tcp_stream.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"
command -v bridge >/dev/null || fail "bridge (iproute2) not found"

work_dir vnet-vxlan
# shellcheck source=lib/vxlan_hosts.sh
. "$HERE/lib/vxlan_hosts.sh"
vxlan_hosts_start
DATAPATH=splice  # until the socket datapath's section
MAC_A=02:00:00:00:0a:0a
MAC_B=02:00:00:00:0b:0b
BROADCAST=ff:ff:ff:ff:ff:ff

# ---- the uplinks ----------------------------------------------------------------
vxlan_uplinks_add
for h in "$HA" "$HB"; do
    ip -n "$h" -d link show "$VX" | grep -q "vxlan id $VNI .*dstport 4789" ||
        fail "no $VX with vni $VNI in $h: $(ip -n "$h" -d link show "$VX" 2>&1)"
    [ "$(ip netns exec "$h" cat /sys/class/net/$VX/mtu)" = 1450 ] || fail "$VX mtu in $h"
    [ "$(ip netns exec "$h" cat /sys/class/net/$VT/mtu)" = 1450 ] || fail "$VT mtu in $h"
    tc -n "$h" filter show dev "$VT" ingress | grep -q "tc_redirect" || fail "no tc program on $VT in $h"
    tc -n "$h" filter show dev "$VX" ingress | grep -q "tc_redirect" || fail "no tc program on $VX in $h"
done
bridge -n "$HA" fdb show dev "$VX" | grep -q "^00:00:00:00:00:00 dst $IP_B " ||
    fail "no flood entry to $IP_B: $(bridge -n "$HA" fdb show dev "$VX")"
ctl_a port list | grep -qE "^uplink-s0 +vxlan +$VX vni $VNI to $IP_B " || fail "port list: $(ctl_a port list)"
ok "uplinks: $VX (vni $VNI, udp 4789, mtu 1450) spliced to $VT by tc on both hosts, peers set"

# The exact errors; each changes nothing.
expect_refused() {  # CTL EXPECTED-MESSAGE ARGS...
    local ctl=$1 want=$2 got
    shift 2
    got=$("$ctl" "$@" 2>&1) && fail "$* succeeded: $got"
    [ "$got" = "vnetctl: $want" ] || fail "$*: expected 'vnetctl: $want', got '$got'"
}
expect_refused ctl_a "port 'uplink-two': switch 's0' has a vxlan uplink already (one per switch)" \
    switch uplink add s0 vxlan --vni 7 --name uplink-two
expect_refused ctl_a "port 'uplink-nope': switch 'nope' is not defined (no [[switch]] of that name)" \
    switch uplink add nope vxlan --vni 7
expect_refused ctl_a "vxlan 'vxlan$VNI': peer '10.201.0.300' is not an IPv4 or IPv6 address" \
    switch uplink peer add s0 10.201.0.300
expect_refused ctl_a "vxlan 'vxlan$VNI': peer $IP_B is there already" switch uplink peer add s0 "$IP_B"
expect_refused ctl_a "vxlan 'vxlan$VNI': no peer 10.201.0.9" switch uplink peer del s0 10.201.0.9
ctl_a switch add s9 >/dev/null || fail "switch add s9"
expect_refused ctl_a "switch 's9' has no vxlan uplink (vnetctl switch uplink add s9 vxlan --vni N ...)" \
    switch uplink peer add s9 "$IP_B"
# A vxlan device of that name that vnetd did not make is not touched.
ip -n "$HA" link add vxlan77 type vxlan id 77 dstport 4790 || fail "a foreign vxlan77"
expect_refused ctl_a "port 'uplink-s9': vxlan 'vxlan77': creating the vxlan device (vni 77, udp port 4789) failed: Object exists" \
    switch uplink add s9 vxlan --vni 77
ip -n "$HA" -d link show vxlan77 | grep -q "vxlan id 77 .*dstport 4790" || fail "the foreign vxlan77 was changed"
ip -n "$HA" link del vxlan77
[ "$(bridge -n "$HA" fdb show dev "$VX" | grep -c "^00:00:00:00:00:00")" = 1 ] ||
    fail "the refused calls changed the FDB: $(bridge -n "$HA" fdb show dev "$VX")"
ok "errors: second uplink, unknown switch, bad address, peer twice, unknown peer, no uplink, a foreign vxlan77"

# ---- the guests --------------------------------------------------------------------
ctl_a port add vhost-user a --socket-path "$WORK/a.sock" --switch s0 >/dev/null || fail "port a"
ctl_b port add vhost-user b --socket-path "$WORK/b.sock" --switch s0 >/dev/null || fail "port b"

pktgen() { timeout 120 "$PKTGEN" --connect-timeout 20 --stats-interval 0 "$@"; }
# counters HOST: every hop's count on one host, KEY=VALUE lines.
counters() {
    local h=$1 ns ctl
    if [ "$h" = a ]; then ns=$HA ctl=ctl_a; else ns=$HB ctl=ctl_b; fi
    "$ctl" --json stats >"$WORK/stats-$h.json" || fail "stats of $h"
    echo "port_rx=$(vnetd_stats "$WORK/stats-$h.json" "$h.rx.packets")"
    echo "port_tx=$(vnetd_stats "$WORK/stats-$h.json" "$h.tx.packets")"
    echo "uplink_rx=$(vnetd_stats "$WORK/stats-$h.json" uplink-s0.rx.packets)"
    echo "uplink_tx=$(vnetd_stats "$WORK/stats-$h.json" uplink-s0.tx.packets)"
    # The socket datapath has no kernel devices: only the underlay then.
    for dev in $([ "$DATAPATH" = splice ] && echo "$VT $VX") "$( [ "$h" = a ] && echo "$UA" || echo "$UB")"; do
        for f in rx_packets tx_packets tx_dropped; do
            echo "${dev%%[0-9]*}_$f=$(link_stat "$ns" "$dev" "$f")"
        done
    done
}
# delta HOST KEY: KEY's growth since the last `snapshot`.
snapshot() { counters a >"$WORK/before-a"; counters b >"$WORK/before-b"; }
delta() {
    local now before
    now=$(counters "$1" | grep "^$2=" | cut -d= -f2)
    before=$(grep "^$2=" "$WORK/before-$1" | cut -d= -f2)
    echo $((now - before))
}

# send FROM TO-MAC RECEIVER: N frames from FROM's guest, RECEIVER's guest
# counting; "rx" ends in $WORK/rx.out.
send() {
    local from=$1 dst=$2 to=$3 src
    if [ "$from" = a ]; then src=$MAC_A; else src=$MAC_B; fi
    bg_start --out "$WORK/rx.out" --err "$WORK/rx.log" "$PKTGEN" --connect-timeout 20 \
        --socket-path "$WORK/$to.sock" --rx
    RX=$BG_PID
    wait_for 20 "the receiving vnet-pktgen on $to did not come up" log_has "$WORK/rx.log" "link up"
    snapshot
    pktgen --socket-path "$WORK/$from.sock" --tx --count "$N" --rate "$RATE" --src-mac "$src" \
        --dst-mac "$dst" >"$WORK/tx.out" 2>"$WORK/tx.log" || fail "$from's frames: $(tail -3 "$WORK/tx.log")"
    sleep 1
    stop_pid "$RX" INT
}

# ---- broadcast b -> a --------------------------------------------------------------
send b "$BROADCAST" a
check_equal "broadcast b -> a, every hop" "N=$N" \
    "b_pktgen_tx=$(pktgen_value "$WORK/tx.out" tx-packets)" \
    "b_port_rx=$(delta b port_rx)" "b_uplink_tx=$(delta b uplink_tx)" \
    "hB_vxtap_rx=$(delta b vxtap_rx_packets)" "hB_vxlan_tx=$(delta b vxlan_tx_packets)" \
    "hB_veth_tx=$(delta b vxu_tx_packets)" "hA_veth_rx=$(delta a vxu_rx_packets)" \
    "hA_vxlan_rx=$(delta a vxlan_rx_packets)" "hA_vxtap_tx=$(delta a vxtap_tx_packets)" \
    "a_uplink_rx=$(delta a uplink_rx)" "a_port_tx=$(delta a port_tx)" \
    "a_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)" \
    "a_pktgen_verified=$(pktgen_value "$WORK/rx.out" rx-verified)"
ctl_a mac list --switch s0 | grep -qE "$MAC_B +uplink-s0" || fail "hA did not learn $MAC_B at the uplink: $(ctl_a mac list)"
check_equal "the MTU the guests read (VIRTIO_NET_F_MTU)" "tunnel=1450" \
    "a=$(pktgen_value "$WORK/rx.out" mtu)" "b=$(pktgen_value "$WORK/tx.out" mtu)"
ok "broadcast crossed once, $N at every hop; hA's switch learned $MAC_B behind uplink-s0; guests offered mtu 1450"

# ---- unicast a -> b ----------------------------------------------------------------
send a "$MAC_B" b
check_equal "unicast a -> b" "N=$N" "a_port_rx=$(delta a port_rx)" "a_uplink_tx=$(delta a uplink_tx)" \
    "hA_veth_tx=$(delta a vxu_tx_packets)" "hB_veth_rx=$(delta b vxu_rx_packets)" \
    "b_uplink_rx=$(delta b uplink_rx)" "b_port_tx=$(delta b port_tx)" \
    "b_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)" \
    "b_pktgen_verified=$(pktgen_value "$WORK/rx.out" rx-verified)"
bridge -n "$HA" fdb show dev "$VX" | grep -q "^$MAC_B dst $IP_B " ||
    fail "hA's kernel did not learn $MAC_B behind $IP_B: $(bridge -n "$HA" fdb show dev "$VX")"
ok "unicast a -> b: $N through the tunnel once; the kernel learned $MAC_B behind $IP_B"

# ---- a peer removed stops the flow -----------------------------------------------
out=$(ctl_a switch uplink peer del s0 "$IP_B") || fail "peer del: $out"
[ "$out" = "switch s0: peer $IP_B removed" ] || fail "peer del said: $out"
[ -z "$(bridge -n "$HA" fdb show dev "$VX" | grep "dst $IP_B")" ] ||
    fail "entries to $IP_B left: $(bridge -n "$HA" fdb show dev "$VX")"
send a "$MAC_B" b
check_equal "after peer del" "N=$N" "a_uplink_tx=$(delta a uplink_tx)" \
    "hA_vxlan_tx_dropped=$(delta a vxlan_tx_dropped)"
check_equal "nothing crossed" "zero=0" "hA_veth_tx=$(delta a vxu_tx_packets)" \
    "b_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)"
ok "peer del: the flood entry and $MAC_B behind $IP_B gone; $N frames dropped by $VX, none crossed"
ctl_a switch uplink peer add s0 "$IP_B" >/dev/null || fail "peer add again"
send a "$MAC_B" b
check_equal "after peer add" "N=$N" "hA_veth_tx=$(delta a vxu_tx_packets)" \
    "b_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)"
ok "peer add: the flow is back"

# ---- uplink del ----------------------------------------------------------------------
out=$(ctl_a switch uplink del s0) || fail "uplink del: $out"
[ "$out" = "switch s0: uplink uplink-s0 removed" ] || fail "uplink del said: $out"
ip -n "$HA" link show "$VX" >/dev/null 2>&1 && fail "$VX left in $HA"
# The tap goes once its last file reference does, which io_uring drops a
# moment after vnetd closed it.
wait_for 5 "$VT left in $HA" vxlan_gone_in "$HA" "$VT"
expect_refused ctl_a "switch 's0' has no uplink" switch uplink del s0
ok "uplink del: port, $VX and $VT gone"
ctl_b switch uplink del s0 >/dev/null || fail "uplink del on $HB"
wait_for 5 "$VT left in $HB" vxlan_gone_in "$HB" "$VT"

# ---- the socket datapath: vnetd's own UDP socket, no kernel device -----------------
# The same guests, a new uplink on each host. The underlay's counters are
# not per frame here (a UDP_SEGMENT send crosses the veth as one GSO
# packet), so the guests' count and verify what arrives, byte for byte.
DATAPATH=socket
out=$(ctl_a switch uplink add s0 vxlan --vni "$VNI" --local "$IP_A" --remote "$IP_B" --datapath socket 2>&1) ||
    fail "socket uplink add on $HA: $out"
out=$(ctl_b switch uplink add s0 vxlan --vni "$VNI" --local "$IP_B" --remote "$IP_A" --datapath socket 2>&1) ||
    fail "socket uplink add on $HB: $out"
for h in "$HA" "$HB"; do
    vxlan_gone_in "$h" "$VX" && vxlan_gone_in "$h" "$VT" || fail "the socket datapath made a device in $h"
done
ctl_a port list | grep -qE "^uplink-s0 +vxlan +udp 4789 vni $VNI to $IP_B " || fail "port list: $(ctl_a port list)"
show_socket_uplink() {  # the uplink's show and stats say socket, with its one peer
    ctl_a --json show uplink-s0 >"$WORK/show-socket.json" || fail "show uplink-s0"
    ctl_a --json stats >"$WORK/stats-socket.json" || fail "stats"
    python3 - "$WORK/show-socket.json" "$WORK/stats-socket.json" "$1" <<'PY' || fail "show/stats of the socket uplink"
import json, sys
show = json.load(open(sys.argv[1]))[0]
vx = show["vxlan"]
want = {"datapath": "socket", "vni": 4242, "local": "10.201.0.1", "dstport": 4789, "mtu": 1450,
        "evpn": False, "peers": json.loads(sys.argv[3])}
got = {k: vx.get(k) for k in want}
assert got == want, f"show: {got} != {want}"
# The inner flows' source ports (vxlan_source_ports, 8 unless told): the
# receiving socket's first, the others distinct.
source = vx.get("source_ports")
assert isinstance(source, list) and len(source) == 8 and source[0] == 4789 and len(set(source)) == 8, \
    f"show: source_ports {source}"
stats = json.load(open(sys.argv[2]))
ports = stats["ports"] if isinstance(stats, dict) and "ports" in stats else stats
up = [p for p in ports if p.get("name") == "uplink-s0"]
assert up and up[0]["kind"] == "vxlan" and "vxlan" in up[0], f"stats: {up}"
PY
}
show_socket_uplink "[\"$IP_B\"]"
ok "socket datapath: no $VX or $VT; port list, show and stats say so"

send b "$BROADCAST" a
check_equal "socket: broadcast b -> a" "N=$N" \
    "b_pktgen_tx=$(pktgen_value "$WORK/tx.out" tx-packets)" \
    "b_port_rx=$(delta b port_rx)" "b_uplink_tx=$(delta b uplink_tx)" \
    "a_uplink_rx=$(delta a uplink_rx)" "a_port_tx=$(delta a port_tx)" \
    "a_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)" \
    "a_pktgen_verified=$(pktgen_value "$WORK/rx.out" rx-verified)"
ctl_a mac list --switch s0 | grep -qE "$MAC_B +uplink-s0" || fail "hA did not learn $MAC_B at the uplink: $(ctl_a mac list)"
send a "$MAC_B" b
check_equal "socket: unicast a -> b" "N=$N" "a_port_rx=$(delta a port_rx)" \
    "a_uplink_tx=$(delta a uplink_tx)" "b_uplink_rx=$(delta b uplink_rx)" \
    "b_port_tx=$(delta b port_tx)" "b_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)" \
    "b_pktgen_verified=$(pktgen_value "$WORK/rx.out" rx-verified)"
ok "socket datapath: broadcast b -> a and unicast a -> b, $N each, verified byte for byte"

out=$(ctl_a switch uplink peer del s0 "$IP_B") || fail "socket peer del: $out"
show_socket_uplink "[]"
send a "$MAC_B" b
check_equal "socket: nothing crossed after peer del" "zero=0" \
    "hA_veth_tx=$(delta a vxu_tx_packets)" "b_uplink_rx=$(delta b uplink_rx)" \
    "b_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)"
ctl_a switch uplink peer add s0 "$IP_B" >/dev/null || fail "socket peer add again"
show_socket_uplink "[\"$IP_B\"]"
send a "$MAC_B" b
check_equal "socket: after peer add" "N=$N" "b_uplink_rx=$(delta b uplink_rx)" \
    "b_pktgen_rx=$(pktgen_value "$WORK/rx.out" rx-packets)" \
    "b_pktgen_verified=$(pktgen_value "$WORK/rx.out" rx-verified)"
ok "socket datapath: peer del stops the flow to $IP_B, peer add brings it back"

# uplink_gro HOST: the uplink's received "FRAMES SEGMENTS" merged so far.
uplink_gro() {
    "ctl_$1" --json stats | python3 -c '
import json, sys
for p in json.load(sys.stdin)["ports"]:
    if p["name"] == "uplink-s0":
        g = p["queues"][0]["rx"]["gro"]
        print(g["frames"], g["segments"])'
}
for h in a b; do
    host=$HA
    [ $h = b ] && host=$HB
    tap=$(link_name vxp $h)
    pod=$(ns_name vxpod $h)
    "ctl_$h" port add tap pod --tap "$tap" --switch s0 >/dev/null || fail "pod tap on $h"
    netns_new "$pod"
    ip -n "$host" link set "$tap" netns "$pod" || fail "$tap into $pod"
    ip -n "$pod" link set "$tap" name eth0 mtu 1450 up && ip -n "$pod" link set lo up &&
        ip -n "$pod" addr add "10.212.0.$([ $h = a ] && echo 1 || echo 2)/24" dev eth0 ||
        fail "pod link in $pod"
done
read -r gro_frames_before gro_segments_before <<<"$(uplink_gro b)"
bg_start ip netns exec "$(ns_name vxpod b)" bash -c \
    "$(declare -f stream_receiver); stream_receiver 5201 4 $WORK/stream-received"
receiver=$BG_PID
sent=$(ip netns exec "$(ns_name vxpod a)" bash -c \
    "$(declare -f stream_sender); stream_sender 10.212.0.2 5201 16 $VT_ID") || fail "stream sender failed"
wait "$receiver" || fail "stream receiver failed"
forget "$receiver"
check_equal "socket: pod a -> pod b TCP stream, length and sha256" "sent=$sent" \
    "received=$(cat "$WORK/stream-received")"
read -r gro_frames gro_segments <<<"$(uplink_gro b)"
gro_frames=$((gro_frames - gro_frames_before))
gro_segments=$((gro_segments - gro_segments_before))
[ "$gro_frames" -gt 0 ] && [ "$gro_segments" -ge $((2 * gro_frames)) ] ||
    fail "hB's uplink merged $gro_segments segments into $gro_frames frames"
ok "socket datapath: a 16 MiB TCP stream pod a -> pod b arrives whole; hB's uplink merged $gro_segments segments into $gro_frames frames"

vxlan_hosts_stop
pass "vxlan uplink: two hosts, every hop counted, broadcast, unicast, peer del/add, errors; the same over the socket datapath"
