# Hosts joined by BGP EVPN through FRR (issue 30), for test_evpn_frr.sh
# and test_evpn_frr_standin.sh. Sourced after common.sh and work_dir.
#
#   underlay   namespace UL holding bridge br0, 10.250.0.0/24 (EVPN_NET);
#              each host's eth0 is a veth whose peer p<N> is a port of
#              br0. No IPv6 anywhere, so the underlay carries the tunnel,
#              BGP and ARP only. A bridge-family nftables table counts the
#              VXLAN datagrams (UDP 4789) br0 forwards, per ingress and
#              egress port (evpn_vxlan_count).
#   reflector  namespace RR, 10.250.0.254: zebra + bgpd, a route reflector
#              for l2vpn evpn whose clients are whoever connects from
#              10.250.0.0/24 (`bgp listen range ... peer-group HOSTS`), so
#              a host joins with no change to any other configuration.
#   hosts      evpn_host_add N: namespace EVPN_NS[N], 10.250.0.N on eth0,
#              zebra + bgpd peering with the reflector, `advertise-all-vni`:
#              zebra advertises every VNI it finds in the kernel (a vxlan
#              device in a bridge) with its local MACs (the bridge's FDB
#              entries on ports other than the vxlan device) as type-2
#              routes and installs the remote ones as extern_learn entries
#              and head-end replication entries (00:00:00:00:00:00 dst VTEP).
#
# Every FRR daemon runs in the foreground under bg_start (stopped by its
# pid at exit) with its own pathspace (-N <the namespace's name>: its vty
# and zserv sockets in /var/run/frr/<name>/, removed at exit; `vtysh -N
# <name>` talks to it, evpn_vtysh), its configuration, pid file and log in
# $WORK/frr/<name>/. Timers are short (keepalive 1 s, hold 3 s, the
# least BGP allows; connect retry 1 s; no advertisement interval), so a
# route crosses in well under a second once the sessions are up. A new
# session's first routes wait bgpd's coalesce-time (1 s, kept: it is what
# a real host that joins sees; `coalesce-time 0` halves the join's time).
# shellcheck shell=bash

EVPN_NET=10.250.0
EVPN_RR_IP=$EVPN_NET.254
EVPN_ASN=65000
EVPN_FRR=/usr/lib/frr
declare -A EVPN_NS=()        # host number -> namespace
declare -A EVPN_BGPD_PID=()  # host number -> its bgpd's pid
declare -A EVPN_ZEBRA_PID=() # host number -> its zebra's pid

# evpn_need_frr: FRR's zebra, bgpd and vtysh are installed (scripts/install-deps.sh).
evpn_need_frr() {
    [ -x "$EVPN_FRR/zebra" ] && [ -x "$EVPN_FRR/bgpd" ] && command -v vtysh >/dev/null ||
        fail "FRR not installed (zebra, bgpd in $EVPN_FRR, vtysh; scripts/install-deps.sh)"
    command -v nft >/dev/null || fail "nft (nftables) not found"
}

# evpn_underlay_start: UL with br0 and its VXLAN counters, and the reflector.
evpn_underlay_start() {
    evpn_need_frr
    UL=$(ns_name evu)
    netns_new "$UL"
    ip -n "$UL" link add br0 type bridge || fail "underlay bridge"
    ip -n "$UL" link set br0 up || fail "underlay bridge up"
    ip netns exec "$UL" nft -f - <<NFT || fail "underlay counters"
add table bridge vxlan
add chain bridge vxlan counts { type filter hook forward priority 0; policy accept; }
NFT
    RR=$(ns_name evrr)
    netns_new "$RR"
    _evpn_link "$RR" 254
    cat >"$(_evpn_dir "$RR")/bgpd.conf" <<CONF
frr defaults datacenter
hostname rr
log file $(_evpn_dir "$RR")/bgpd.log
!
router bgp $EVPN_ASN
 bgp router-id $EVPN_RR_IP
 no bgp default ipv4-unicast
 neighbor HOSTS peer-group
 neighbor HOSTS remote-as $EVPN_ASN
 neighbor HOSTS timers 1 3
 neighbor HOSTS advertisement-interval 0
 bgp listen range $EVPN_NET.0/24 peer-group HOSTS
 !
 address-family l2vpn evpn
  neighbor HOSTS activate
  neighbor HOSTS route-reflector-client
 exit-address-family
CONF
    _evpn_frr_start "$RR"
    ok "underlay $UL (br0, $EVPN_NET.0/24), route reflector $RR at $EVPN_RR_IP"
}

# evpn_host_add N: host N (1..253): namespace EVPN_NS[N] with eth0 at
# 10.250.0.N in the underlay, zebra + bgpd peering with the reflector.
# EVPN_HOST_IP is its address; EVPN_BGPD_PID[N] and EVPN_ZEBRA_PID[N] its
# daemons' pids.
# shellcheck disable=SC2034 # for the tests
evpn_host_add() {
    local n=$1 ns
    ns=$(ns_name evh "$n")
    EVPN_NS[$n]=$ns
    netns_new "$ns"
    _evpn_link "$ns" "$n"
    EVPN_HOST_IP=$EVPN_NET.$n
    ip netns exec "$UL" nft add rule bridge vxlan counts iifname "p$n" udp dport 4789 counter ||
        fail "counter of p$n"
    ip netns exec "$UL" nft add rule bridge vxlan counts oifname "p$n" udp dport 4789 counter ||
        fail "counter to p$n"
    cat >"$(_evpn_dir "$ns")/bgpd.conf" <<CONF
frr defaults datacenter
hostname h$n
log file $(_evpn_dir "$ns")/bgpd.log
!
router bgp $EVPN_ASN
 bgp router-id $EVPN_HOST_IP
 no bgp default ipv4-unicast
 neighbor $EVPN_RR_IP remote-as $EVPN_ASN
 neighbor $EVPN_RR_IP timers 1 3
 neighbor $EVPN_RR_IP timers connect 1
 neighbor $EVPN_RR_IP advertisement-interval 0
 !
 address-family l2vpn evpn
  neighbor $EVPN_RR_IP activate
  advertise-all-vni
 exit-address-family
CONF
    _evpn_frr_start "$ns"
    EVPN_BGPD_PID[$n]=$BG_PID
    EVPN_ZEBRA_PID[$n]=$EVPN_LAST_ZEBRA_PID
}

# evpn_vtysh N|NS COMMAND...: vtysh -N on host N's (or namespace NS's) FRR.
evpn_vtysh() {
    local ns=${EVPN_NS[$1]:-$1}
    shift
    local args=() c
    for c in "$@"; do args+=(-c "$c"); done
    vtysh -N "$ns" --config_dir "$WORK/frr" "${args[@]}"
}

# evpn_established N: host N's session with the reflector is up.
evpn_established() {
    evpn_vtysh "$1" "show bgp l2vpn evpn summary json" |
        jq -e --arg rr "$EVPN_RR_IP" '.peers[$rr].state == "Established"' >/dev/null
}

# evpn_vxlan_count iif|oif N: VXLAN datagrams br0 forwarded from (iif) or
# to (oif) host N's port since the test began.
evpn_vxlan_count() {
    local dir=${1}name port=p$2
    ip netns exec "$UL" nft list chain bridge vxlan counts |
        awk -v d="$dir" -v p="\"$port\"" '$1 == d && $2 == p { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }'
}

# evpn_remote_mac_in_fdb NS DEV MAC IP: zebra installed MAC behind VTEP IP
# on DEV (extern_learn).
evpn_remote_mac_in_fdb() {
    bridge -n "$1" fdb show dev "$2" | grep -qE "^$3 dst $4 .*extern_learn"
}

# evpn_mac_known N VNI MAC IP: host N's zebra knows MAC as remote at VTEP IP.
evpn_mac_known() {
    evpn_vtysh "$1" "show evpn mac vni $2 mac $3" | grep -qE "Remote VTEP: $4\b"
}

# ---- internals -------------------------------------------------------------------

# _evpn_dir NS: $WORK/frr/NS, made on first use. FRR's daemons drop root
# for the frr user (they refuse to run as a user outside the frrvty group),
# so it is frr's, and WORK lets frr through to it.
_evpn_dir() {
    local dir=$WORK/frr/$1
    if [ ! -d "$dir" ]; then
        mkdir -p "$dir" && chmod o+x "$WORK" && chown frr:frr "$WORK/frr" "$dir" ||
            fail "FRR's directory $dir"
    fi
    echo "$dir"
}

# _evpn_link NS N: a veth eth0 (in NS, 10.250.0.N/24, up) - pN (a port of
# br0 in UL).
_evpn_link() {
    local ns=$1 n=$2
    ip link add eth0 netns "$ns" type veth peer name "p$n" netns "$UL" || fail "veth of $ns"
    ip -n "$UL" link set "p$n" master br0 up || fail "p$n into br0"
    ip -n "$ns" addr add "$EVPN_NET.$n/24" dev eth0 || fail "address of $ns"
    # The underlay carries what a NIC would put on a wire: checksums done
    # and datagrams cut before the veth, which would otherwise hand its
    # peer namespace the kernel's unfinished work (a CHECKSUM_PARTIAL inner
    # frame, a 64 KB tunnel GSO packet) that only a kernel vxlan device
    # can take, not the socket datapath's UDP socket (docs/USAGE.md); and
    # so that the underlay's counters count datagrams.
    ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null || fail "tx offloads off in $ns"
    ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up || fail "links up in $ns"
}

# _evpn_frr_start NS: zebra, then bgpd (once zebra's zserv socket is
# there), in NS with pathspace NS and config $WORK/frr/NS/bgpd.conf; BG_PID
# is bgpd's pid, EVPN_LAST_ZEBRA_PID zebra's.
_evpn_frr_start() {
    local ns=$1 dir run=/var/run/frr/$1
    dir=$(_evpn_dir "$ns")
    mkdir -p "$run" && chown frr:frr "$run" || fail "FRR's run directory $run"
    on_exit rm -rf "$run"
    printf 'hostname %s\n' "$ns" >"$dir/zebra.conf"
    : >"$dir/vtysh.conf" # for evpn_vtysh, instead of /etc/frr/NS/vtysh.conf
    # -P 0: no vty on TCP, vtysh talks over the pathspace's unix sockets.
    bg_start --log "$dir/zebra.out" ip netns exec "$ns" "$EVPN_FRR/zebra" -N "$ns" \
        -P 0 -f "$dir/zebra.conf" -i "$dir/zebra.pid" --log "file:$dir/zebra.log"
    EVPN_LAST_ZEBRA_PID=$BG_PID
    wait_for 10 "zebra in $ns did not open its zserv socket" test -S "$run/zserv.api"
    bg_start --log "$dir/bgpd.out" ip netns exec "$ns" "$EVPN_FRR/bgpd" -N "$ns" \
        -P 0 -f "$dir/bgpd.conf" -i "$dir/bgpd.pid"
    wait_for 10 "bgpd in $ns did not open its vty socket" test -S "$run/bgpd.vty"
}
