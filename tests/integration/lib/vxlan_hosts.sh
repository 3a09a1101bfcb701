# Two "hosts" on one machine joined by the kernel's VXLAN (issue 11), for
# test_vxlan_uplink.sh and test_vxlan_qemu.sh: network namespaces HA and
# HB, a veth pair UA-UB between them as the underlay (IP_A and IP_B, static
# neighbours and no IPv6, so it carries only the tunnel's packets), one
# vnetd in each (control sockets $WORK/a.ctl and $WORK/b.ctl, ctl_a and
# ctl_b) with switch s0, and the uplinks. Sourced after common.sh and
# work_dir; the test sets VNETD, VNETCTL, VNI, HOLD_US and may set the
# underlay's /24 (VXLAN_UNDERLAY, default 10.201.0).
# shellcheck shell=bash

# vxlan_hosts_start: the namespaces, the underlay and the two vnetd
# (VNETD_A, VNETD_B), waited for until their control sockets answer.
vxlan_hosts_start() {
    local net=${VXLAN_UNDERLAY:-10.201.0} h
    HA=$(ns_name vxa)
    HB=$(ns_name vxb)
    netns_new "$HA"
    netns_new "$HB"
    UA=$(link_name vxu a)
    UB=$(link_name vxu b)
    IP_A=$net.1
    IP_B=$net.2
    ip link add "$UA" netns "$HA" type veth peer name "$UB" netns "$HB" || fail "veth underlay"
    ip -n "$HA" addr add "$IP_A/24" dev "$UA" && ip -n "$HB" addr add "$IP_B/24" dev "$UB" ||
        fail "underlay addresses"
    ip -n "$HA" link set "$UA" up && ip -n "$HB" link set "$UB" up || fail "underlay up"
    local mac_ua mac_ub
    mac_ua=$(ip -n "$HA" -br link show "$UA" | awk '{print $3}')
    mac_ub=$(ip -n "$HB" -br link show "$UB" | awk '{print $3}')
    # Static neighbours: no ARP on the underlay, so it counts only the tunnel.
    ip -n "$HA" neigh replace "$IP_B" lladdr "$mac_ub" dev "$UA" nud permanent &&
        ip -n "$HB" neigh replace "$IP_A" lladdr "$mac_ua" dev "$UB" nud permanent ||
        fail "static neighbours"
    ok "hosts $HA ($IP_A) and $HB ($IP_B) joined by veth $UA-$UB"

    for h in a b; do
        cat >"$WORK/$h.toml" <<TOML
[daemon]
control_socket = "$WORK/$h.ctl"

[[switch]]
name = "s0"
destination_hold_us = $HOLD_US
TOML
        fail_log "$WORK/vnetd-$h.log" 20
    done
    bg_start --log "$WORK/vnetd-a.log" ip netns exec "$HA" "$VNETD" --config "$WORK/a.toml"
    VNETD_A=$BG_PID
    bg_start --log "$WORK/vnetd-b.log" ip netns exec "$HB" "$VNETD" --config "$WORK/b.toml"
    VNETD_B=$BG_PID
    wait_for 10 "vnetd on $HA did not open its control socket" test -S "$WORK/a.ctl"
    wait_for 10 "vnetd on $HB did not open its control socket" test -S "$WORK/b.ctl"
    VX=vxlan$VNI
    VT=vxtap$VNI
}

ctl_a() { "$VNETCTL" --socket "$WORK/a.ctl" "$@"; }
ctl_b() { "$VNETCTL" --socket "$WORK/b.ctl" "$@"; }

# vxlan_uplinks_add: each host's s0 gets its uplink to the other, as an
# operator or a cluster agent would add it.
vxlan_uplinks_add() {
    local out
    out=$(ctl_a switch uplink add s0 vxlan --vni "$VNI" --local "$IP_A" --remote "$IP_B" 2>&1) ||
        fail "uplink add on $HA: $out"
    [ "$out" = "switch s0: vxlan uplink uplink-s0 added" ] || fail "uplink add said: $out"
    out=$(ctl_b switch uplink add s0 vxlan --vni "$VNI" --local "$IP_B" --remote "$IP_A" 2>&1) ||
        fail "uplink add on $HB: $out"
}

# vxlan_hosts_stop: both vnetd end with exit status 0, and each took its
# vxlan device with it (its tap goes once io_uring drops the last file
# reference, a moment after).
vxlan_gone_in() { ! ip -n "$1" link show "$2" >/dev/null 2>&1; }
vxlan_hosts_stop() {
    stop_pid "$VNETD_A" || fail "vnetd on $HA exit status $?"
    stop_pid "$VNETD_B" || fail "vnetd on $HB exit status $?"
    local h
    for h in "$HA" "$HB"; do
        vxlan_gone_in "$h" "$VX" || fail "$VX left in $h after vnetd exited"
        wait_for 5 "$VT left in $h after vnetd exited" vxlan_gone_in "$h" "$VT"
    done
}
