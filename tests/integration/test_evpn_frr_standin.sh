#!/bin/bash
# FRR's half of EVPN alone (issue 30), with the kernel side vnetd makes in
# EVPN mode built by hand: the harness of lib/evpn.sh (an underlay bridge,
# a route reflector, zebra + bgpd per host) and two hosts, each with the
# devices of the contract (bridge vxbr100, vxlan100 nolearning in it) and a
# veth "VM" port whose MAC is a static FDB entry on the bridge, as vnetd
# writes the MACs its switch learns.
#   - each host's MAC reaches the other as a type-2 route: `show evpn mac
#     vni 100` has it as remote at the right VTEP and the kernel FDB holds
#     it on vxlan100 as extern_learn; both have the other's VTEP in the
#     flood list (00:00:00:00:00:00 dst VTEP self permanent);
#   - a third host joins with no change to the first two's configuration
#     and both learn its MAC;
#   - unicast from host 1's "VM" to host 2's crosses the underlay as one
#     VXLAN datagram per frame, to host 2 only; a broadcast as one to each
#     other host (head-end replication; counted on the underlay bridge);
#   - a MAC's static entry removed: withdrawn everywhere;
#   - a host's FRR stopped: its MAC and flood entry withdrawn everywhere
#     (hold time 3 s);
#   - every one within 3 s (the times are printed).
# It checks the harness and the FRR configuration docs/MULTIHOST.md gives
# without vnetd; test_evpn_frr.sh runs vnetd's EVPN uplinks on the same.
# Usage: test_evpn_frr_standin.sh BUILD_DIR   (as root; BUILD_DIR unused)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
VNI=100
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
work_dir vnet-evpn-standin
# shellcheck source=lib/evpn.sh
. "$HERE/lib/evpn.sh"

# standin_host N: host N with vxbr100, vxlan100 and a "VM" veth (vm0 in the
# bridge, vm1 its guest end) with MAC 02:00:00:00:0N:02, a static entry.
standin_host() {
    local n=$1 ns mac
    evpn_host_add "$n"
    ns=${EVPN_NS[$n]}
    mac=$(standin_mac "$n")
    ip -n "$ns" link add vxbr$VNI type bridge &&
        ip -n "$ns" link add vxlan$VNI type vxlan id $VNI local "$EVPN_HOST_IP" dstport 4789 nolearning &&
        ip -n "$ns" link set vxlan$VNI master vxbr$VNI &&
        bridge -n "$ns" link set dev vxlan$VNI learning off &&
        ip -n "$ns" link add vm0 type veth peer name vm1 &&
        ip -n "$ns" link set vm1 address "$mac" &&
        ip -n "$ns" link set vm0 master vxbr$VNI &&
        bridge -n "$ns" link set dev vm0 learning off &&
        bridge -n "$ns" fdb add "$mac" dev vm0 master static &&
        ip -n "$ns" link set vm1 up && ip -n "$ns" link set vm0 up &&
        ip -n "$ns" link set vxlan$VNI up && ip -n "$ns" link set vxbr$VNI up ||
        fail "the stand-in's devices in $ns"
}
standin_mac() { printf '02:00:00:00:%02x:02' "$1"; }

# known_everywhere N FROM...: host N's MAC is remote behind 10.250.0.N in
# zebra and in the kernel FDB of every host FROM, and so is N's flood entry.
known_everywhere() {
    local n=$1 h mac
    shift
    mac=$(standin_mac "$n")
    for h in "$@"; do
        evpn_mac_known "$h" $VNI "$mac" "$EVPN_NET.$n" || return 1
        evpn_remote_mac_in_fdb "${EVPN_NS[$h]}" vxlan$VNI "$mac" "$EVPN_NET.$n" || return 1
        bridge -n "${EVPN_NS[$h]}" fdb show dev vxlan$VNI |
            grep -qE "^00:00:00:00:00:00 dst $EVPN_NET.$n self permanent" || return 1
    done
}
# gone_everywhere N FROM...: neither N's MAC nor its flood entry is left.
gone_everywhere() {
    local n=$1 h mac
    shift
    mac=$(standin_mac "$n")
    for h in "$@"; do
        ! evpn_vtysh "$h" "show evpn mac vni $VNI" | grep -q "$mac" || return 1
        ! bridge -n "${EVPN_NS[$h]}" fdb show dev vxlan$VNI | grep -qE "^($mac|00:00:00:00:00:00) dst $EVPN_NET.$n " ||
            return 1
    done
}
# timed SECS WHAT CMD...: wait for CMD, print how long it took.
timed() {
    local secs=$1 what=$2 t0
    shift 2
    t0=$(_vt_now_us)
    wait_for "$secs" "$what" "$@"
    ok "$what: $((($(_vt_now_us) - t0) / 1000)) ms"
}

evpn_underlay_start
standin_host 1
standin_host 2
wait_for 10 "host 1's session with the reflector" evpn_established 1
wait_for 10 "host 2's session with the reflector" evpn_established 2
timed 3 "host 1's MAC on host 2" known_everywhere 1 2
timed 3 "host 2's MAC on host 1" known_everywhere 2 1
echo "--- host 1: show evpn mac vni $VNI"
evpn_vtysh 1 "show evpn mac vni $VNI"
echo "--- host 1: bridge fdb show dev vxlan$VNI"
bridge -n "${EVPN_NS[1]}" fdb show dev vxlan$VNI

standin_host 3
wait_for 10 "host 3's session with the reflector" evpn_established 3
timed 3 "host 3 joined: its MAC on hosts 1 and 2" known_everywhere 3 1 2
timed 3 "hosts 1 and 2 known on host 3" known_everywhere 1 3
wait_for 3 "host 2 known on host 3" known_everywhere 2 3

# inject N FROM DST-MAC: N frames out of host FROM's "VM"; every host's
# "VM" receive count and the underlay's VXLAN counts before it are in
# $WORK/before.
N=200
counts() {
    local h
    for h in 1 2 3; do
        echo "vm$h=$(link_stat "${EVPN_NS[$h]}" vm1 rx_packets) from$h=$(evpn_vxlan_count iif "$h")" \
            "to$h=$(evpn_vxlan_count oif "$h")"
    done | tr ' ' '\n'
}
delta() { echo $(($(counts | grep "^$1=" | cut -d= -f2) - $(grep "^$1=" "$WORK/before" | cut -d= -f2))); }
inject() {
    counts >"$WORK/before"
    ip netns exec "${EVPN_NS[$1]}" python3 "$HERE/lib/pktgen_frames.py" inject --ifname vm1 --count "$3" \
        --src-mac "$(standin_mac "$1")" --dst-mac "$2" >/dev/null || fail "frames from host $1"
    sleep 0.5
}
inject 1 "$(standin_mac 2)" $N
check_equal "unicast host 1 -> host 2: one datagram per frame, to host 2 only" "N=$N" \
    "underlay_from_1=$(delta from1)" "underlay_to_2=$(delta to2)" "vm2_rx=$(delta vm2)"
check_zero "unicast host 1 -> host 2: nothing elsewhere" "underlay_to_3=$(delta to3)" "vm3_rx=$(delta vm3)"
inject 1 ff:ff:ff:ff:ff:ff 1
check_equal "a broadcast from host 1: one datagram to each other host" "one=1" \
    "underlay_to_2=$(delta to2)" "underlay_to_3=$(delta to3)" "vm2_rx=$(delta vm2)" "vm3_rx=$(delta vm3)"
check_equal "a broadcast from host 1: head-end replication" "two=2" "underlay_from_1=$(delta from1)"
ok "unicast: $N frames, $N datagrams to the one VTEP; broadcast: one copy to each of the two others"

bridge -n "${EVPN_NS[3]}" fdb del "$(standin_mac 3)" dev vm0 master static || fail "fdb del on host 3"
t0=$(_vt_now_us)
wait_for 3 "host 3's MAC withdrawn" sh -c "! vtysh -N ${EVPN_NS[1]} -c 'show evpn mac vni $VNI' | grep -q $(standin_mac 3)"
ok "host 3's MAC withdrawn after its entry went: $((($(_vt_now_us) - t0) / 1000)) ms"

stop_pid "${EVPN_BGPD_PID[2]}" || fail "bgpd on host 2 exit status $?"
stop_pid "${EVPN_ZEBRA_PID[2]}" || fail "zebra on host 2 exit status $?"
timed 5 "host 2's FRR stopped: its MAC and flood entry withdrawn" gone_everywhere 2 1 3
pass "evpn stand-in: type-2/type-3 routes, kernel FDB, a host joins, withdrawals"
