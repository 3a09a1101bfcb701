#!/bin/bash
# A real libvirt domain (Debian 12: libvirt 9.0, QEMU 7.2 under TCG) with its
# network on vnetd, set up the way docs/USAGE.md "libvirt" says, both ways
# round. The domain is libvirt/guest.xml; its guest is the busybox initramfs
# of test_qemu_guest.sh. libvirt's QEMU runs as libvirt-qemu:kvm, not root.
#
#  (a) <interface type='vhostuser'> mode='client' with <reconnect enabled='yes'
#      timeout='2'/>: vnetd runs the Debian package's shipped configuration
#      (deploy/vnetd.toml, only its paths and tap name moved into the test's
#      directory), so the socket libvirt's QEMU connects to is the packaged
#      default: root:kvm 0660 in a directory vnetd makes root:kvm 0750. The
#      guest boots, gets
#      link and pings the address of vnetd's tap (in a netns) 3/3. Then vnetd
#      is restarted under the running guest (SIGTERM, a new vnetd on the same
#      socket): the guest sees its link drop and come back, QEMU having
#      reconnected by itself, and pings 3/3 again; no guest reboot.
#  (b) mode='server': QEMU listens on a socket in a directory owned by
#      libvirt-qemu, `vnetd --client` connects to it. The guest pings 3/3 and
#      runs iperf3 both ways against a server in the netns.
# Also asserted: the socket QEMU connects to in (a) is root:kvm 0660; every
# vnetd exits 0 on SIGTERM and forwarded packets both ways in each life; the
# domain's <driver rx_queue_size='1024' tx_queue_size='1024'/> reached vnetd
# as rings of 1024 in every life.
#
# libvirtd and virtlogd are started by the test (no systemd here) unless a
# libvirtd already answers on qemu:///system, and stopped by PID at the end.
#
# Usage: test_libvirt.sh BUILD_DIR   (as root)
# Environment: VNET_QEMU_KERNEL (see guest_kernel in lib/common.sh),
# VNET_LIBVIRT_TIMEOUT=240 (s per domain), VNET_KEEP_WORK=1.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DOMAIN_TIMEOUT=${VNET_LIBVIRT_TIMEOUT:-240}

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (libvirtd, network namespaces, taps)"
for tool in libvirtd virtlogd virsh qemu-system-x86_64 iperf3; do
    command -v "$tool" >/dev/null || fail "$tool not found (scripts/install-deps.sh)"
done
id libvirt-qemu >/dev/null 2>&1 || fail "no user libvirt-qemu (Debian package libvirt-daemon-system)"
need_built "$VNETD"
guest_kernel

work_dir vnet-libvirt
# libvirt's QEMU (libvirt-qemu) reads the kernel and initramfs from here.
chmod 0755 "$WORK"
NS=$(ns_name vnet-lv)
TAP=$(link_name vnlv)
HOST_IP=10.79.$((VT_ID % 250)).1
GUEST_IP=10.79.$((VT_ID % 250)).2
DOMAIN=vnet-test-$VT_ID
for f in libvirtd.log vnetd-a1.log vnetd-a2.log vnetd-b.log console-a.txt console-b.txt; do
    fail_log "$WORK/$f" 30
done

virsh_() { virsh -q -c qemu:///system "$@"; }
libvirt_answers() { virsh_ uri >/dev/null; }

# ---- libvirtd ------------------------------------------------------------------
# Not tracked (bg_start): tracked processes are signalled first at exit, and
# libvirtd must outlive the `virsh destroy` of the domains, registered later
# and so run earlier. Stopped by PID, last.
LIBVIRT_PIDS=()
stop_libvirt() {
    local pid
    for pid in "${LIBVIRT_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${LIBVIRT_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
}
if ! timeout 10 virsh -c qemu:///system version >/dev/null 2>&1; then
    on_exit stop_libvirt
    # virtlogd first: libvirt hands QEMU's stdout/stderr to it.
    if [ ! -S /run/libvirt/virtlogd-sock ]; then
        (exec virtlogd </dev/null >"$WORK/virtlogd.log" 2>&1) &
        LIBVIRT_PIDS+=($!)
    fi
    (exec libvirtd </dev/null >"$WORK/libvirtd.log" 2>&1) &
    LIBVIRT_PIDS+=($!)
    wait_for 30 "libvirtd did not answer on qemu:///system" libvirt_answers
fi
ok "libvirt $(virsh_ version | sed -n 's/^Using library: libvirt //p'), $(virsh_ version | sed -n 's/^Running hypervisor: //p')"

echo "== guest kernel $KVER; netns $NS, tap $TAP, host $HOST_IP, guest $GUEST_IP"
install -m 0644 "$KERNEL" "$WORK/kernel"
bash "$HERE/qemu/build_initramfs.sh" "$KVER" "$WORK/initrd.gz" 2>"$WORK/initramfs.log" ||
    fail "initramfs: $(cat "$WORK/initramfs.log")"
chmod 0644 "$WORK/initrd.gz"

netns_new "$NS"
bg_start --log "$WORK/iperf3-server.log" ip netns exec "$NS" iperf3 -s -B "$HOST_IP" -f m
iperf_listening() { ip netns exec "$NS" ss -Hltn "sport = :5201" | grep -q LISTEN; }

# tap_into_netns VNETD_LOG: once vnetd has set its tap up (moving it earlier
# would take it away under vnetd's feet), move it into the netns and give it
# the host address; a tap of vnetd's previous life may still be going away
# there.
tap_into_netns() {
    wait_for 10 "vnetd did not set up tap $TAP" log_has "$1" "port [^ ]+: tap $TAP "
    wait_for 10 "could not move $TAP into $NS" ip link set "$TAP" netns "$NS"
    ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "ip addr add"
    ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$TAP.disable_ipv6=1" 2>/dev/null
    ip -n "$NS" link set "$TAP" up || fail "ip link set $TAP up"
}

# start_domain CASE MODE SOCKET RECONNECT EXTRA_CMDLINE: the domain of
# libvirt/guest.xml, its serial console in $WORK/console-CASE.log.
start_domain() {
    local xml="$WORK/domain-$1.xml"
    local cmdline="console=ttyS0 quiet panic=-1 ipv6.disable=1 vnet_host=$HOST_IP vnet_guest=$GUEST_IP vnet_secs=2 $5"
    sed -e "s|@DOMAIN@|$DOMAIN-$1|" -e "s|@KERNEL@|$WORK/kernel|" -e "s|@INITRD@|$WORK/initrd.gz|" \
        -e "s|@CMDLINE@|$cmdline|" -e "s|@CONSOLE@|$WORK/console-$1.log|" \
        -e "s|@MAC@|52:54:00:4c:56:0$([ "$1" = a ] && echo 1 || echo 2)|" \
        -e "s|@SOCKET@|$3|" -e "s|@MODE@|$2|" -e "s|@RECONNECT@|$4|" \
        "$HERE/libvirt/guest.xml" >"$xml"
    on_exit virsh -q -c qemu:///system destroy "$DOMAIN-$1"
    virsh_ create "$xml" >"$WORK/virsh-create-$1.log" 2>&1 ||
        fail "virsh create ($2): $(cat "$WORK/virsh-create-$1.log"; tail -n 5 "/var/log/libvirt/qemu/$DOMAIN-$1.log" 2>/dev/null)"
    ok "domain $DOMAIN-$1 started (interface mode='$2')"
}

domain_running() { virsh_ domid "$DOMAIN-$1" >/dev/null 2>&1; }
console_has() { tr -d '\r' <"$WORK/console-$1.log" 2>/dev/null | grep -q "^VNET-GUEST $2"; }

# wait_domain CASE VNETD_PID: until the guest powered off (a transient domain
# then disappears), failing if vnetd dies first or the guest takes too long.
wait_domain() {
    local end=$(($(date +%s) + DOMAIN_TIMEOUT))
    while domain_running "$1"; do
        running "$2" || fail "vnetd exited while the guest of case $1 ran"
        [ "$(date +%s)" -lt "$end" ] || fail "the guest of case $1 still runs after ${DOMAIN_TIMEOUT}s"
        sleep 0.5
    done
    tr -d '\r' <"$WORK/console-$1.log" >"$WORK/console-$1.txt"
    grep -q '^VNET-GUEST done' "$WORK/console-$1.txt" || fail "the guest of case $1 did not finish its script"
}

guest() { sed -n "s/^VNET-GUEST $2//p" "$WORK/console-$1.txt"; }

check() {  # check DESCRIPTION COMMAND...: lib/common.sh's, with an ok line for each pass
    local what=$1
    shift
    if "$@"; then ok "$what"; else FAILS+=("$what"); fi
}
check_ping() {  # check_ping CASE TAG
    local summary
    summary=$(guest "$1" "$2: " | grep 'packets transmitted')
    check "case $1 $2: ${summary:-no summary}" grep -qE '^3 packets transmitted, 3 packets received' <<<"$summary"
}
# check_rings CASE LIFE LOG: the guest's rings are the domain's 1024 entries.
check_rings() {
    check "case $1 vnetd $2: rings of 1024 ($(grep -o 'queue pair 0 running.*' "$3" | head -n 1))" \
        log_has "$3" 'queue pair 0 running \(rings 0 and 1, 1024 entries\)'
}
# check_forwarded CASE LIFE STATS_FILE: vnetd moved packets both ways.
check_forwarded() {
    local rx tx
    read -r rx tx < <(vnetd_stats "$3" vm0.rx.packets vm0.tx.packets)
    check "case $1 vnetd $2: vm0 rx ${rx:-none} > 0, tx ${tx:-none} > 0" test "${rx:-0}" -gt 0 -a "${tx:-0}" -gt 0
}

# ---- (a) QEMU connects to vnetd, and reconnects to its next life -------------
echo "== (a) mode='client', vnetd restarted under the running guest"
mkdir -m 0755 "$WORK/run"
SOCK_A="$WORK/run/vm/vm0.sock"
# shipped_config LIFE: $WORK/vnetd-aLIFE.toml, deploy/vnetd.toml with its
# /run/vnetd paths under $WORK/run, the test's tap, and a stats file for
# this life; fails if one of them was not there to move.
shipped_config() {
    local out="$WORK/vnetd-a$1.toml"
    sed -e "s|\"/run/vnetd/|\"$WORK/run/|" -e "s|\"vm0tap\"|\"$TAP\"|" \
        -e "/^\[daemon\]/a stats_file = \"$WORK/stats-a$1.json\"" "$HERE/../../deploy/vnetd.toml" >"$out"
    grep -q "socket_path = \"$SOCK_A\"" "$out" && grep -q "tap = \"$TAP\"" "$out" &&
        ! grep -q '"/run/vnetd' "$out"
}
shipped_config 1 || fail "deploy/vnetd.toml no longer has the paths this test moves"
bg_start --log "$WORK/vnetd-a1.log" "$VNETD" --config "$WORK/vnetd-a1.toml"
VNETD_PID=$BG_PID
wait_for 10 "vnetd did not create $SOCK_A" test -S "$SOCK_A"
check "packaged socket for libvirt-qemu: $(stat -c '%U:%G %a' "$SOCK_A") = root:kvm 660" \
    test "$(stat -c '%U:%G %a' "$SOCK_A")" = "root:kvm 660"
check "... in a directory vnetd made: $(stat -c '%U:%G %a' "${SOCK_A%/*}") = root:kvm 750" \
    test "$(stat -c '%U:%G %a' "${SOCK_A%/*}")" = "root:kvm 750"
tap_into_netns "$WORK/vnetd-a1.log"
start_domain a client "$SOCK_A" "<reconnect enabled='yes' timeout='2'/>" vnet_relink=1
wait_until "$DOMAIN_TIMEOUT" console_has a "waiting for the link to drop" ||
    { wait_domain a "$VNETD_PID"; fail "the guest never got to its first ping"; }
stop_pid "$VNETD_PID" TERM 10
check "case a vnetd 1 exits 0 on SIGTERM (rc $?)" test $? = 0
shipped_config 2 || fail "deploy/vnetd.toml no longer has the paths this test moves"
bg_start --log "$WORK/vnetd-a2.log" "$VNETD" --config "$WORK/vnetd-a2.toml"
VNETD_PID=$BG_PID
tap_into_netns "$WORK/vnetd-a2.log"
wait_domain a "$VNETD_PID"
stop_pid "$VNETD_PID" TERM 10
check "case a vnetd 2 exits 0 on SIGTERM (rc $?)" test $? = 0
check_ping a ping
check "case a: the guest saw its link drop" grep -q '^VNET-GUEST link down' "$WORK/console-a.txt"
check "case a: ... and come back" grep -q '^VNET-GUEST link up' "$WORK/console-a.txt"
check_ping a ping2
check "case a vnetd 2: QEMU reconnected" log_has "$WORK/vnetd-a2.log" 'front end connected'
check_forwarded a 1 "$WORK/stats-a1.json"
check_forwarded a 2 "$WORK/stats-a2.json"
check_rings a 1 "$WORK/vnetd-a1.log"
check_rings a 2 "$WORK/vnetd-a2.log"

# ---- (b) QEMU listens, vnetd connects ------------------------------------------
echo "== (b) mode='server', vnetd --client"
install -d -o libvirt-qemu -g kvm -m 0750 "$WORK/qemu"
SOCK_B="$WORK/qemu/vm0.sock"
wait_for 10 "iperf3 -s did not start listening" iperf_listening
# QEMU waits for vnetd's connection before it starts the guest (and virsh
# create waits for QEMU): vnetd goes first and retries until QEMU listens.
start_vnetd "$WORK/vnetd-b.log" --client --socket-path "$SOCK_B" --tap "$TAP" \
    --control-socket "" --stats-file "$WORK/stats-b.json"
tap_into_netns "$WORK/vnetd-b.log"
start_domain b server "$SOCK_B" "" ""
wait_domain b "$VNETD_PID"
stop_pid "$VNETD_PID" TERM 10
check "case b vnetd exits 0 on SIGTERM (rc $?)" test $? = 0
check_ping b ping
for dir in tx rx; do
    check "case b iperf3 $dir exit status" test "$(guest b "iperf-$dir-rc ")" = 0
    rate=$(guest b "iperf-$dir: " | awk '$NF == "receiver" { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") r = $(i - 1) } END { print (r == "" ? "none" : r) }')
    check "case b iperf3 $dir: $rate Mbit/s received" awk -v r="$rate" 'BEGIN { exit !(r + 0 > 0) }'
done
check_forwarded b 1 "$WORK/stats-b.json"
check_rings b 1 "$WORK/vnetd-b.log"

checks_passed
pass "libvirt domains on vnetd: client mode with a vnetd restart, server mode with iperf3"
