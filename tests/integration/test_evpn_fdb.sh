#!/bin/bash
# A switch's VXLAN uplink in EVPN mode (issue 30), without FRR: one vnetd
# in namespace hE with switch s0, two vnet-pktgen guests a and b on it, and
# `switch uplink add s0 vxlan --evpn`. Two namespaces r2 and r3 stand for
# two other VTEPs, each behind a veth of its own (static neighbours both
# ways, no IPv6: each veth carries only the tunnel's datagrams, so its
# counter counts them). What FRR's zebra would install is installed by
# hand, as zebra does: the flood list (`00:00:00:00:00:00 dst VTEP self
# permanent`) and remote MACs (`MAC dst VTEP self extern_learn`, plus the
# bridge's `master extern_learn` entry). Checked:
#   - the kernel objects: bridge vxbr<VNI> without IPv6 or multicast
#     snooping, vxlan<VNI> nolearning with no remote, both it and
#     vxtap<VNI> its ports with learning off (and flooding: the bridge
#     sends nothing, which the exact counts below also show);
#   - the refusals: --evpn with --remote, uplink peer add on it;
#   - a's MAC is a static entry on vxtap<VNI> after its first frames (a
#     broadcast, which leaves once per flood-list VTEP: N on each veth);
#   - a remote MAC shows in `vnetctl mac list` behind the uplink; N unicast
#     frames to it leave as N datagrams to its VTEP only (r2 N, r3 0) and
#     reach no local guest (b 0); zebra's withdrawal takes it away;
#   - a MAC remote first, then sending here (a VM that moved in) is local:
#     behind its port in the switch and static in the bridge; zebra
#     installing it behind another VTEP while it is silent here (it moved
#     away) puts it behind the uplink and takes the static entry away;
#   - a's entry goes when its port is deleted, b's with `mac flush`;
#   - `switch uplink del` removes the bridge and both devices; vnetd exits 0.
# With VNET_TEST_VXLAN_DATAPATH=socket the same on the socket datapath:
# the devices are only zebra's table there (no tc splice), vnetd's socket
# takes the VXLAN port from the vxlan device (a socket lookup program) and
# forwards by the entries read back: the same exact counts on the underlay;
# and a flood list of 1,025 VTEPs, one more than the port holds, is taken
# less the one it names in a warning.
# Usage: test_evpn_fdb.sh BUILD_DIR   (as root)
#   VNET_TEST_FRAMES N (default 500)
#   VNET_TEST_VXLAN_DATAPATH splice|socket (default splice)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-500}
DATAPATH=${VNET_TEST_VXLAN_DATAPATH:-splice}
RATE=20000
VNI=4343
NET2=10.213.2
NET3=10.213.3

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"
need_commands bridge jq

work_dir vnet-evpn
HE=$(ns_name evh)
R2=$(ns_name evr2)
R3=$(ns_name evr3)
U2=$(link_name evu 2)
U3=$(link_name evu 3)
BR=vxbr$VNI
VX=vxlan$VNI
VT=vxtap$VNI
MAC_A=02:00:00:00:0e:0a
MAC_B=02:00:00:00:0e:0b
MAC_R=02:00:00:00:0e:0c
BROADCAST=ff:ff:ff:ff:ff:ff

# ---- the host, the two other VTEPs and vnetd --------------------------------------
# underlay_to NS LINK NET: veth LINK (NET.1, in hE) to "peer" (NET.2, in NS),
# with static neighbours both ways.
underlay_to() {
    local ns=$1 link=$2 net=$3 mac_h mac_r
    ip link add "$link" netns "$HE" type veth peer name peer netns "$ns" || fail "veth to $ns"
    ip -n "$HE" addr add "$net.1/24" dev "$link" || fail "address of $link"
    ip -n "$ns" addr add "$net.2/24" dev peer || fail "address in $ns"
    # A UDP_SEGMENT send (the socket datapath's) is cut before the veth, as
    # for a NIC without USO, so that the counters count datagrams.
    ip netns exec "$HE" ethtool -K "$link" tx-udp-segmentation off >/dev/null ||
        fail "USO off on $link"
    ip -n "$HE" link set "$link" up || fail "$link up"
    ip -n "$ns" link set peer up || fail "peer up in $ns"
    mac_h=$(ip -n "$HE" -br link show "$link" | awk '{print $3}')
    mac_r=$(ip -n "$ns" -br link show peer | awk '{print $3}')
    ip -n "$HE" neigh replace "$net.2" lladdr "$mac_r" dev "$link" nud permanent ||
        fail "static neighbour in $HE"
    ip -n "$ns" neigh replace "$net.1" lladdr "$mac_h" dev peer nud permanent ||
        fail "static neighbour in $ns"
}
netns_new "$HE"
netns_new "$R2"
netns_new "$R3"
underlay_to "$R2" "$U2" "$NET2"
underlay_to "$R3" "$U3" "$NET3"
VTEP2=$NET2.2
VTEP3=$NET3.2

CTL=$WORK/e.ctl
cat >"$WORK/e.toml" <<TOML
[daemon]
control_socket = "$CTL"

[[switch]]
name = "s0"
destination_hold_us = 200000
TOML
fail_log "$WORK/vnetd.log" 20
start_vnetd "$WORK/vnetd.log" --netns "$HE" -- --config "$WORK/e.toml"
wait_control

expect_refused() {  # EXPECTED-MESSAGE ARGS...
    local want=$1 got
    shift
    got=$(ctl "$@" 2>&1) && fail "$* succeeded: $got"
    [ "$got" = "vnetctl: $want" ] || fail "$*: expected 'vnetctl: $want', got '$got'"
}

# ---- the uplink and its kernel objects ---------------------------------------------
expect_refused "port 'uplink-s0': evpn takes the remote VTEPs from the control plane (FRR): give no vxlan_remote (--remote)" \
    switch uplink add s0 vxlan --vni "$VNI" --local "$NET2.1" --evpn --remote "$VTEP2" --datapath "$DATAPATH"
out=$(ctl switch uplink add s0 vxlan --vni "$VNI" --local "$NET2.1" --evpn --datapath "$DATAPATH" 2>&1) ||
    fail "uplink add: $out"
[ "$out" = "switch s0: vxlan uplink uplink-s0 added" ] || fail "uplink add said: $out"
ip -n "$HE" -d link show "$BR" | grep -q "bridge " || fail "no bridge $BR: $(ip -n "$HE" -d link show "$BR" 2>&1)"
ip -n "$HE" -d link show "$BR" | grep -q "mcast_snooping 0 " || fail "$BR snoops multicast"
ip -n "$HE" -d link show "$BR" | grep -q "addrgenmode none" || fail "$BR makes IPv6 addresses"
ip -n "$HE" -d link show "$VX" | grep -q "master $BR " || fail "$VX not in $BR"
ip -n "$HE" -d link show "$VX" | grep -q "vxlan id $VNI local $NET2.1 .*dstport 4789 nolearning" ||
    fail "$VX: $(ip -n "$HE" -d link show "$VX")"
ip -n "$HE" -d link show "$VT" | grep -q "master $BR " || fail "$VT not in $BR"
for dev in "$VX" "$VT"; do
    bridge -n "$HE" -d link show dev "$dev" | grep -q "learning off" ||
        fail "learning on $dev: $(bridge -n "$HE" -d link show dev "$dev")"
    ip -n "$HE" link show "$dev" | grep -q "state UNKNOWN\|state UP" || fail "$dev is not up"
done
! bridge -n "$HE" fdb show dev "$VX" | grep -q " dst " ||
    fail "$VX has remotes: $(bridge -n "$HE" fdb show dev "$VX")"
if [ "$DATAPATH" = splice ]; then
    tc -n "$HE" filter show dev "$VT" ingress | grep -q "tc_redirect" || fail "no tc splice on $VT"
    ctl port list | grep -qE "^uplink-s0 +vxlan +$VX vni $VNI evpn in $BR " || fail "port list: $(ctl port list)"
else
    # No splice: the devices carry no frame. The socket is on a port of
    # the kernel's choosing, and the VXLAN port's datagrams are steered to it.
    tc -n "$HE" filter show dev "$VT" ingress | grep -q . && fail "a tc program on $VT"
    ctl port list | grep -qE "^uplink-s0 +vxlan +udp 4789 vni $VNI evpn in $BR " || fail "port list: $(ctl port list)"
    ctl --json show uplink-s0 >"$WORK/show.json" || fail "show uplink-s0"
    jq -e '.[0].vxlan | .datapath == "socket" and .evpn and .dstport == 4789 and .socket_port != 4789
           and .bridge == "'"$BR"'" and .device == "'"$VX"'"' "$WORK/show.json" >/dev/null ||
        fail "show uplink-s0: $(jq -c '.[0].vxlan' "$WORK/show.json")"
fi
expect_refused "switch 's0': its uplink is in EVPN mode: the remote VTEPs come from the control plane (FRR), not from uplink peer add/del" \
    switch uplink peer add s0 "$VTEP2"
ok "uplink ($DATAPATH): $BR (no IPv6, no snooping) holds $VX (nolearning, no remote) and $VT, learning off on both; --remote and peer add refused"

# What zebra installs for the two other hosts of the VNI (type-3 routes).
for vtep in "$VTEP2" "$VTEP3"; do
    bridge -n "$HE" fdb append 00:00:00:00:00:00 dev "$VX" dst "$vtep" self permanent ||
        fail "flood entry $vtep"
done

# The socket datapath takes them from the next sync round (the kernel's
# device uses them at once).
floods_to() {
    [ "$DATAPATH" = splice ] ||
        [ "$(ctl --json stats | jq '.ports[] | select(.name == "uplink-s0") | .vxlan.flood_vteps')" = "$1" ]
}
wait_for 3 "uplink-s0 does not flood to the 2 VTEPs: $(ctl --json stats | jq -c '.ports[] | select(.name == "uplink-s0") | .vxlan')" \
    floods_to 2
if [ "$DATAPATH" = socket ]; then  # show's peers are the flood list there
    peers=$(ctl --json show uplink-s0 | jq -c '.[0].vxlan.peers')
    [ "$peers" = "[\"$VTEP2\",\"$VTEP3\"]" ] || fail "show uplink-s0: peers $peers"
fi

# ---- the guests --------------------------------------------------------------------
ctl port add vhost-user a --socket-path "$WORK/a.sock" --switch s0 >/dev/null || fail "port a"
ctl port add vhost-user b --socket-path "$WORK/b.sock" --switch s0 >/dev/null || fail "port b"
pktgen() { timeout 60 "$PKTGEN" --connect-timeout 20 --stats-interval 0 "$@"; }
underlay() { echo "$(link_stat "$R2" peer rx_packets) $(link_stat "$R3" peer rx_packets)"; }
# (A static entry that replaced zebra's keeps its extern_learn flag: the
# kernel moves the entry to the tap and keeps the flag.)
static_on_tap() { bridge -n "$HE" fdb show br "$BR" | grep -qE "^$1 dev $VT (extern_learn )?master $BR static"; }
no_static_on_tap() { ! static_on_tap "$1"; }
behind() { ctl mac list --switch s0 | grep -qE "^s0 +1 +$1 +$2 "; }
not_in_switch() { ! ctl mac list --switch s0 | grep -q " $1 "; }

# ---- a's first frames: a broadcast, replicated by the kernel ----------------------
read -r r2_before r3_before <<<"$(underlay)"
pktgen --socket-path "$WORK/a.sock" --tx --count "$N" --rate "$RATE" --src-mac "$MAC_A" \
    --dst-mac "$BROADCAST" >"$WORK/tx.out" 2>"$WORK/tx.log" || fail "a's broadcast: $(tail -3 "$WORK/tx.log")"
wait_for 3 "$MAC_A is not a static entry on $VT: $(bridge -n "$HE" fdb show br "$BR")" static_on_tap "$MAC_A"
sleep 0.5
read -r r2_after r3_after <<<"$(underlay)"
check_equal "a's broadcast, once per VTEP of the flood list" "N=$N" \
    "a_sent=$(pktgen_value "$WORK/tx.out" tx-packets)" "r2=$((r2_after - r2_before))" \
    "r3=$((r3_after - r3_before))"
ok "a's MAC $MAC_A is static on $VT (zebra's to advertise); its broadcast left once to each VTEP"

# ---- a remote MAC, as zebra installs it (type-2 route) ----------------------------
zebra_install() {  # MAC VTEP
    bridge -n "$HE" fdb replace "$1" dev "$VX" dst "$2" self master dynamic extern_learn ||
        fail "installing $1 behind $2"
}
zebra_install "$MAC_R" "$VTEP2"
wait_for 3 "$MAC_R not behind uplink-s0: $(ctl mac list)" behind "$MAC_R" uplink-s0
bg_start --out "$WORK/rx.out" --err "$WORK/rx.log" "$PKTGEN" --connect-timeout 20 \
    --socket-path "$WORK/b.sock" --rx
RX=$BG_PID
wait_for 20 "the receiving vnet-pktgen on b did not come up" log_has "$WORK/rx.log" "link up"
read -r r2_before r3_before <<<"$(underlay)"
pktgen --socket-path "$WORK/a.sock" --tx --count "$N" --rate "$RATE" --src-mac "$MAC_A" \
    --dst-mac "$MAC_R" >"$WORK/tx.out" 2>"$WORK/tx.log" || fail "a's unicast: $(tail -3 "$WORK/tx.log")"
sleep 1
read -r r2_after r3_after <<<"$(underlay)"
stop_pid "$RX" INT
check_equal "unicast a -> $MAC_R: to its VTEP only" "N=$N" \
    "a_sent=$(pktgen_value "$WORK/tx.out" tx-packets)" "r2=$((r2_after - r2_before))"
check_equal "and nowhere else" "zero=0" "r3=$((r3_after - r3_before))" \
    "b=$(pktgen_value "$WORK/rx.out" rx-packets)"
ok "$MAC_R behind uplink-s0; $N unicast frames to it left as $N datagrams to $VTEP2, none to $VTEP3 or b"

bridge -n "$HE" fdb del "$MAC_R" dev "$VX" dst "$VTEP2" self master || fail "withdrawing $MAC_R"
wait_for 3 "$MAC_R still in the switch after zebra withdrew it: $(ctl mac list)" not_in_switch "$MAC_R"
ok "withdrawn: $MAC_R left the switch"

# ---- a VM that moved in: remote first, then its frame here ------------------------
zebra_install "$MAC_B" "$VTEP3"
wait_for 3 "$MAC_B not behind uplink-s0: $(ctl mac list)" behind "$MAC_B" uplink-s0
# Its first frame on this host (a gratuitous broadcast, like QEMU's RARP).
pktgen --socket-path "$WORK/b.sock" --tx --count 1 --drain-timeout 5 --src-mac "$MAC_B" \
    --dst-mac "$BROADCAST" \
    >"$WORK/tx.out" 2>"$WORK/tx.log" || fail "b's frame: $(tail -3 "$WORK/tx.log")"
wait_for 3 "$MAC_B is not a static entry on $VT: $(bridge -n "$HE" fdb show br "$BR")" static_on_tap "$MAC_B"
sleep 0.5  # a few more rounds: it must stay local while zebra's entry lingers
behind "$MAC_B" b || fail "$MAC_B not behind b: $(ctl mac list)"
static_on_tap "$MAC_B" || fail "$MAC_B's static entry went again"
ok "a MAC that moved in: behind b in the switch, static on $VT in the bridge"

# ---- and away again: zebra moves it to another VTEP while b is silent here ------
zebra_install "$MAC_B" "$VTEP2"
wait_for 3 "$MAC_B not behind uplink-s0 after it moved away: $(ctl mac list)" behind "$MAC_B" uplink-s0
no_static_on_tap "$MAC_B" || fail "$MAC_B still static on $VT after it moved away"
ok "a MAC that moved away (zebra's newer route, silent here): behind the uplink, no static entry"

# ---- its port deleted, a flush ---------------------------------------------------
ctl port del a >/dev/null || fail "port del a"
wait_for 3 "$MAC_A's static entry outlived its port: $(bridge -n "$HE" fdb show br "$BR")" \
    no_static_on_tap "$MAC_A"
pktgen --socket-path "$WORK/b.sock" --tx --count 1 --drain-timeout 5 --src-mac "$MAC_B" \
    --dst-mac "$BROADCAST" >"$WORK/tx.out" 2>"$WORK/tx.log" || fail "b's frame: $(tail -3 "$WORK/tx.log")"
wait_for 3 "$MAC_B is not static again" static_on_tap "$MAC_B"
ctl mac flush --switch s0 >/dev/null || fail "mac flush"
wait_for 3 "$MAC_B's static entry outlived the flush: $(bridge -n "$HE" fdb show br "$BR")" \
    no_static_on_tap "$MAC_B"
ok "static entries removed with their port (a) and by mac flush (b, back behind the uplink)"

# ---- more VTEPs than the socket port holds ---------------------------------------
# A flood list of 1,025 (a fabric bigger than the port's 1,024 slots): the
# port takes 1,024 and says which one it left out, rather than keep the
# table before it. The splice's kernel device takes them all.
if [ "$DATAPATH" = socket ]; then
    for i in $(seq 0 1022); do
        echo "fdb append 00:00:00:00:00:00 dev $VX dst 10.99.$((i / 256)).$((i % 256)) self permanent"
    done >"$WORK/many.batch"
    bridge -n "$HE" -batch "$WORK/many.batch" || fail "1,023 more flood entries"
    wait_for 3 "uplink-s0 does not flood to 1,024 VTEPs: $(ctl --json stats | jq -c '.ports[] | select(.name == "uplink-s0") | .vxlan.flood_vteps')" \
        floods_to 1024
    # The last of zebra's entries in the sync's (sorted) order is left out.
    want="port uplink-s0: evpn: 1 flood VTEP(s) and 0 remote MAC(s) of zebra's table left out, the rest taken: vxlan uplink 'uplink-s0': VTEP 10.99.3.99 left out: more than 1024 VTEPs (flood list and remote MACs' together), the most one uplink holds"
    grep -qF "$want" "$WORK/vnetd.log" || fail "no warning naming the VTEP left out: $(grep 'left out' "$WORK/vnetd.log" | tail -2)"
    sed -i 's/fdb append/fdb del/' "$WORK/many.batch"
    bridge -n "$HE" -batch "$WORK/many.batch" || fail "removing the 1,023 flood entries"
    wait_for 3 "uplink-s0 does not flood to its 2 VTEPs again" floods_to 2
    ok "1,025 VTEPs in zebra's flood list: the port took 1,024 and named the one left out; back to 2"
fi

# ---- the uplink goes ------------------------------------------------------------
out=$(ctl switch uplink del s0) || fail "uplink del: $out"
for dev in "$BR" "$VX"; do
    ip -n "$HE" link show "$dev" >/dev/null 2>&1 && fail "$dev left after uplink del"
done
stop_pid "$VNETD_PID" || fail "vnetd exit status $?"
pass "evpn uplink ($DATAPATH datapath): kernel objects, static entries for local MACs, remote MACs read back, unicast to one VTEP"
