#!/bin/bash
# Two real Linux guests (QEMU, TCG, booted at the same time) talk to each
# other through vnetd: each guest's virtio-net-pci device is a vhost-user
# port of one vnetd, and vnetd's config file (two [[port]], one [[connect]])
# joins the two ports. The guests (qemu/guest_init.sh in peer mode:
# vnet_peer, vnet_role) wait for each other, ping each other, run one
# iperf3 test client -> server and send a file of random bytes over TCP
# (busybox nc), whose md5sum both report. Only the config file knows how
# the ports are joined: with VNET_TEST_SWITCH=1 (ctest
# integration.test_qemu_two_guests_switch) they are the members of an L2
# learning switch, with the same guests and assertions.
# Asserts:
#   - each guest's ping of the other: 3 sent, 3 received
#   - iperf3 client and server exit 0, each with a receiver rate > 0
#   - the file: the server received the client's bytes, md5sum and size
#     equal (and the size is the one asked for)
#   - vnetd's --stats-file: each port received exactly what the other
#     transmitted (packets and bytes), no drops, and each port's counts
#     equal its guest's eth0 tx_packets / rx_packets; on the switch, what
#     is missing must be exactly the switch's no_destination drops (a
#     frame from the guest that came up first, before the other's rings ran)
#   - the guests' eth0 error and drop counters are 0
#   - vnetd exits 0 on SIGTERM
# The guests' own report is in their console logs: lines "VNET-GUEST ...".
#
# Usage: test_qemu_two_guests.sh BUILD_DIR   (as root; exit 77 = skipped)
# Environment: VNET_QEMU_KERNEL=/boot/vmlinuz-X (see guest_kernel),
# VNET_QEMU_TIMEOUT=240 (s, each QEMU's whole run), VNET_QEMU_IPERF_SECS=3,
# VNET_QEMU_DATA_KIB=6144 (the file's size), VNET_KEEP_WORK=1.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
QEMU=$(command -v qemu-system-x86_64 || true)
QEMU_TIMEOUT=${VNET_QEMU_TIMEOUT:-240}
IPERF_SECS=${VNET_QEMU_IPERF_SECS:-3}
DATA_KIB=${VNET_QEMU_DATA_KIB:-6144}
# Each guest's wait for the other (s, from its eth0 up); below QEMU_TIMEOUT
# with room for the boot and the rest of the run.
PEER_WAIT=60

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root"
[ -n "$QEMU" ] || skip "qemu-system-x86_64 not found (Debian package qemu-system-x86)"
command -v iperf3 >/dev/null || skip "iperf3 not found"
[ -x /bin/busybox ] || skip "/bin/busybox not found (Debian package busybox-static)"
command -v python3 >/dev/null || skip "python3 not found"

guest_kernel
need_built "$VNETD"

work_dir vnet-qemu-two
CONF="$WORK/vnetd.toml"
STATS="$WORK/stats.json"
NET=10.79.$((VT_ID % 250))
# guest N: role, address, MAC; port vmN, socket vmN.sock, console-N.log
ROLES=(server client)
IPS=("$NET.1" "$NET.2")
MACS=(52:54:00:12:35:01 52:54:00:12:35:02)
T0=$(date +%s.%N)
fail_log "$WORK/vnetd.log" 40
for n in 0 1; do
    fail_log "$WORK/qemu-$n.log" 20
    fail_log "$WORK/console-$n.txt" 60
done

echo "== guest kernel $KVER; guests ${IPS[0]} (server), ${IPS[1]} (client)"
guest_initramfs

# ---- vnetd: two guest ports, joined -------------------------------------------
# VNET_TEST_SWITCH=1: the two ports are members of one L2 learning switch
# instead of a cross-connect. Its hold at a full destination is long enough
# (200 ms) for a TCG guest that is slow to post RX buffers, so nothing is
# dropped and the exact counts below still hold.
# A switch also drops what has no destination yet: a frame from the guest
# that booted first, sent before the other guest's rings run. It counts that
# as the switch's own drop (vnetctl switch list), read before vnetd stops
# and after both guests have left.
CTL=""
if [ "${VNET_TEST_SWITCH:-0}" = 1 ]; then
    MEMBER='switch = "br0"'
    JOIN=$'[[switch]]\nname = "br0"\ndestination_hold_us = 200000'
    CTL="$WORK/vnetd.ctl"
else
    MEMBER=''
    JOIN=$'[[connect]]\nports = ["vm0", "vm1"]'
fi
cat >"$CONF" <<TOML
[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "$WORK/vm0.sock"
$MEMBER

[[port]]
name = "vm1"
type = "vhost-user"
socket_path = "$WORK/vm1.sock"
$MEMBER

$JOIN
TOML
start_vnetd "$WORK/vnetd.log" --config "$CONF" --stats-file "$STATS" --control-socket "$CTL"
wait_for 10 "vnetd did not create its sockets" test -S "$WORK/vm0.sock" -a -S "$WORK/vm1.sock"

# ---- the two guests, at once ------------------------------------------------------
echo "== booting both guests (timeout ${QEMU_TIMEOUT}s)"
T_QEMU=$(date +%s.%N)
QEMU_PIDS=()
for n in 0 1; do
    peer=${IPS[1 - n]}
    guest_command --mb 384 --console "$WORK/console-$n.log" --socket "$WORK/vm$n.sock" --mac "${MACS[n]}" \
        --append "vnet_guest=${IPS[n]} vnet_peer=$peer vnet_role=${ROLES[n]} vnet_wait=$PEER_WAIT vnet_secs=$IPERF_SECS vnet_data_kib=$DATA_KIB"
    bg_start --log "$WORK/qemu-$n.log" timeout -k 5 "$QEMU_TIMEOUT" "${GUEST_CMD[@]}"
    QEMU_PIDS+=("$BG_PID")
done
console_text() { for n in 0 1; do tr -d '\r' <"$WORK/console-$n.log" >"$WORK/console-$n.txt" 2>/dev/null; done; }
while running "${QEMU_PIDS[0]}" || running "${QEMU_PIDS[1]}"; do
    if ! running "$VNETD_PID"; then
        console_text
        fail "vnetd exited while the guests were running"
    fi
    sleep 0.5
done
T_QEMU_END=$(date +%s.%N)
console_text
for n in 0 1; do
    wait "${QEMU_PIDS[n]}"
    rc=$?
    forget "${QEMU_PIDS[n]}"
    [ "$rc" = 124 ] && fail "QEMU $n (${ROLES[n]}) still running after ${QEMU_TIMEOUT}s"
    [ "$rc" = 0 ] || fail "QEMU $n (${ROLES[n]}) exited with $rc"
    grep -q '^VNET-GUEST done' "$WORK/console-$n.txt" || fail "guest $n (${ROLES[n]}) did not finish its script"
done

SWITCH_DROPS=0
if [ -n "$CTL" ]; then
    # A frame for a guest that is shutting down can still be held (a full
    # destination waits up to 200 ms) or in flight when its QEMU exits; the
    # switch counts its drop once it has seen the hang-up. Read the drops
    # after both hang-ups and one hold, so that they match the final counts.
    both_gone() {
        [ "$("$BUILD_DIR/apps/vnetctl" --socket "$CTL" --json port list |
            jq '[.[] | .connections // 0] | add')" = 0 ]
    }
    wait_for 10 "vnetd still shows a guest connected after both QEMUs exited" both_gone
    sleep 0.3
    "$BUILD_DIR/apps/vnetctl" --socket "$CTL" --json switch list >"$WORK/switch.json" ||
        fail "vnetctl switch list"
    read -r SWITCH_DROPS SWITCH_DROP_REASONS < <(python3 -c '
import json, sys
d = {k: v for s in json.load(open(sys.argv[1])) for k, v in s["counters"]["drops"].items() if v}
print(sum(d.values()), ",".join(f"{k}={v}" for k, v in d.items()) or "none")' "$WORK/switch.json")
    echo "switch br0 drops: $SWITCH_DROPS (${SWITCH_DROP_REASONS})"
fi

# vnetd writes its final stats as it exits.
stop_pid "$VNETD_PID" TERM 10
VNETD_RC=$?
[ "$VNETD_RC" = 0 ] || fail "vnetd exited with $VNETD_RC on SIGTERM"

# ---- what the guests saw ------------------------------------------------------------
# guest N PREFIX: the rest of guest N's lines "VNET-GUEST PREFIX..."
guest() { sed -n "s/^VNET-GUEST $2//p" "$WORK/console-$1.txt"; }


# iperf_receiver_rate N TAG: Mbit/s of the "receiver" summary line of guest
# N's iperf3 output TAG (iperf-client or iperf-server).
iperf_receiver_rate() {
    guest "$1" "$2: " | awk '
        $NF == "receiver" { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") r = $(i - 1) }
        END { print (r == "" ? "none" : r) }'
}
positive() { awk -v r="$1" 'BEGIN { exit !(r + 0 > 0) }'; }

declare -A PING=() RATE=()
for n in 0 1; do
    g="guest $n (${ROLES[n]})"
    grep -E '^VNET-GUEST (insmod|no eth0|peer .* did not answer|tcp connections still open)' \
        "$WORK/console-$n.txt" && FAILS+=("$g: setup or wait")
    PING[$n]=$(guest "$n" 'ping: ' | grep 'packets transmitted')
    check "$g ping 3/3 (${PING[$n]})" grep -qE '^3 packets transmitted, 3 packets received' <<<"${PING[$n]}"
    check "$g ping exit status" test "$(guest "$n" 'ping-rc ')" = 0
    tag=iperf-${ROLES[n]}
    check "$g iperf3 exit status" test "$(guest "$n" "$tag-rc ")" = 0
    RATE[$n]=$(iperf_receiver_rate "$n" "$tag")
    check "$g iperf3 receiver rate (${RATE[$n]} Mbit/s)" positive "${RATE[$n]}"
    check "$g nc exit status" test "$(guest "$n" 'nc-rc ')" = 0
    # The driver found no malformed buffer and sent everything it was given;
    # nothing but the test's own traffic reached it (no IPv6, no host).
    for c in rx_errors rx_length_errors rx_frame_errors rx_over_errors rx_crc_errors \
        rx_dropped tx_errors tx_dropped; do
        v=$(guest "$n" "eth0 $c ")
        check "$g eth0 $c = 0 (is ${v:-missing})" test "$v" = 0
    done
done

SEND_MD5=$(guest 1 'send-md5 ')
RECV_MD5=$(guest 0 'recv-md5 ')
SEND_SIZE=$(guest 1 'send-size ')
RECV_SIZE=$(guest 0 'recv-size ')
check "client's file is $((DATA_KIB * 1024)) bytes (is ${SEND_SIZE:-missing})" \
    test "$SEND_SIZE" = $((DATA_KIB * 1024))
check "bytes received ${RECV_SIZE:-missing} = bytes sent ${SEND_SIZE:-missing}" \
    test -n "$SEND_SIZE" -a "$RECV_SIZE" = "$SEND_SIZE"
check "md5 received ${RECV_MD5:-missing} = md5 sent ${SEND_MD5:-missing}" \
    test -n "$SEND_MD5" -a "$RECV_MD5" = "$SEND_MD5"

# ---- vnetd's counters ---------------------------------------------------------------
[ -s "$STATS" ] || fail "vnetd wrote no $STATS"
read -r RX0 RXB0 RXD0 TX0 TXB0 TXD0 RX1 RXB1 RXD1 TX1 TXB1 TXD1 < <(vnetd_stats "$STATS" \
    vm0.rx.packets vm0.rx.bytes vm0.rx.drops vm0.tx.packets vm0.tx.bytes vm0.tx.drops \
    vm1.rx.packets vm1.rx.bytes vm1.rx.drops vm1.tx.packets vm1.tx.bytes vm1.tx.drops)
[ -n "${TXD1:-}" ] || fail "could not read the ports' counters from $STATS"
# What one guest sent is what vnetd gave the other: nothing lost or added,
# but for what the switch counted as dropped (only frames with no
# destination: nothing else may be missing).
if [ "$SWITCH_DROPS" = 0 ]; then
    check "vnetd vm0 rx packets $RX0 = vm1 tx packets $TX1" test "$RX0" = "$TX1"
    check "vnetd vm0 rx bytes $RXB0 = vm1 tx bytes $TXB1" test "$RXB0" = "$TXB1"
    check "vnetd vm1 rx packets $RX1 = vm0 tx packets $TX0" test "$RX1" = "$TX0"
    check "vnetd vm1 rx bytes $RXB1 = vm0 tx bytes $TXB0" test "$RXB1" = "$TXB0"
else
    check "the switch dropped only frames with no destination ($SWITCH_DROP_REASONS)" \
        test "$SWITCH_DROP_REASONS" = "no_destination=$SWITCH_DROPS"
    check "vm0 rx $RX0 >= vm1 tx $TX1 and vm1 rx $RX1 >= vm0 tx $TX0" test "$RX0" -ge "$TX1" -a "$RX1" -ge "$TX0"
    check "what is missing ($((RX0 - TX1)) + $((RX1 - TX0))) is the switch's $SWITCH_DROPS drops" \
        test $((RX0 - TX1 + RX1 - TX0)) = "$SWITCH_DROPS"
fi
check "vnetd drops (vm0 rx $RXD0 tx $TXD0, vm1 rx $RXD1 tx $TXD1) = 0" \
    test "$RXD0$TXD0$RXD1$TXD1" = 0000
# ... and what each guest's driver counted (the guests read their counters
# after their last packet, see guest_init.sh).
for n in 0 1; do
    rx_var=RX$n tx_var=TX$n
    gtx=$(guest "$n" 'eth0 tx_packets ')
    grx=$(guest "$n" 'eth0 rx_packets ')
    check "vnetd vm$n rx packets ${!rx_var} = guest $n eth0 tx_packets ${gtx:-missing}" test "${!rx_var}" = "$gtx"
    check "vnetd vm$n tx packets ${!tx_var} = guest $n eth0 rx_packets ${grx:-missing}" test "${!tx_var}" = "$grx"
done

# ---- summary -------------------------------------------------------------------------
T_END=$(date +%s.%N)
echo "== summary"
awk -v t0="$T0" -v q0="$T_QEMU" -v q1="$T_QEMU_END" -v t1="$T_END" \
    'BEGIN { printf "time: total %.1f s, guests (boot + ping + iperf3 + file) %.1f s\n", t1 - t0, q1 - q0 }'
for n in 0 1; do
    echo "guest $n (${ROLES[n]}, ${IPS[n]}): $(grep -om1 'peer .* answered after .*' "$WORK/console-$n.txt")"
    echo "  ping: ${PING[$n]}"
    guest "$n" "iperf-${ROLES[n]}: " | grep -E 'sender$|receiver$' | sed 's/^/  iperf3: /'
    echo "  eth0: rx_packets $(guest "$n" 'eth0 rx_packets ') tx_packets $(guest "$n" 'eth0 tx_packets ')"
done
echo "file: sent $SEND_SIZE bytes md5 $SEND_MD5; received $RECV_SIZE bytes md5 $RECV_MD5"
echo "vnetd: vm0 rx $RX0 pkts $RXB0 B, tx $TX0 pkts $TXB0 B; vm1 rx $RX1 pkts $RXB1 B, tx $TX1 pkts $TXB1 B"
awk -v b="$RXB1" -v p="$RX1" 'BEGIN { if (p > 0) printf "mean frame client -> server: %d B\n", b / p }'
checks_passed
pass
