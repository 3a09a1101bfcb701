#!/bin/bash
# vnet-pktgen (our virtio-net front end, the guest) -> vnetd -> a tap in a
# network namespace, and back. Every frame is checked byte for byte, and the
# counts of every side must agree exactly.
#
#   (a) pktgen --tx: N frames of random sizes 60..1514 (pktgen's --seed,
#       so the length of every sequence number is known), then N frames of
#       64 B. tcpdump captures them in the netns (-Q in, a 128 MiB ring:
#       at the default N the whole run fits even if tcpdump never gets a
#       CPU; its kernel drop count must be 0), and
#       lib/pktgen_frames.py rebuilds each frame from its sequence number:
#       every sequence number 0..N-1 arrives once, byte-exact, at its exact
#       length.
#         pktgen tx-packets == vnetd vm0 rx == vnetd tap tx
#           == kernel tap rx_packets == tcpdump received == verified == N
#         pktgen tx-bytes == kernel tap rx_bytes == captured frame bytes
#   (b) the reverse: lib/pktgen_frames.py injects N frames of pktgen's
#       format (random sizes) from the netns into the tap (AF_PACKET);
#       pktgen --rx verifies them (headers, IPv4 checksum, every payload
#       byte) and tracks sequence numbers. The tap's txqueuelen is N, so no
#       frame can be dropped on the kernel side while vnetd waits for guest
#       buffers (vnetd reads the tap only into a posted guest buffer).
#         injected == kernel tap tx_packets == vnetd tap rx == vnetd vm0 tx
#           == pktgen rx-packets == rx-verified; rx-bad, rx-lost, rx-foreign 0
#   (c) GSO: pktgen --tx --gso sends G TCP frames of S bytes (default
#       16384, MSS 1448) with a virtio_net_hdr (NEEDS_CSUM, GSO TCPV4);
#       vnetd passes the header to the tap. The kernel may keep each as one
#       GSO skb or segment it, so the checks are on payload, not frames:
#         pktgen tx-packets == vnetd vm0 rx == vnetd tap tx == G, and
#         vnetd's bytes are G * S (plus headers, see check_vnetd_bytes);
#         kernel tap rx_bytes - 54 * rx_packets == G * (S - 54) (every
#         skb or segment carries 54 bytes of Ethernet/IPv4/TCP headers);
#         the captured TCP payloads tile the byte stream 0..G*(S-54)
#         exactly once, byte for byte (pktgen numbers the stream).
#       The capture (lib/pktgen_frames.py capture, AF_PACKET with
#       PACKET_VNET_HDR) also reads each skb's GSO metadata: a frame longer
#       than the MTU must be a TCPV4 GSO skb with gso_size 1448 and the
#       checksum offload at the TCP checksum, i.e. the guest's header
#       reached the kernel intact (a frame that lost it would arrive as a
#       plain 16 KB frame and pass every count).
#   (d) jumbo frames (VNET_TEST_JUMBO=1; ctest
#       integration.test_pktgen_vnetd_tap_jumbo runs vnetd --mtu 9000): the
#       MTU reaches both ends, the tap's MTU is 9000 and pktgen reports
#       `mtu: 9000` (VIRTIO_NET_F_MTU, read with GET_CONFIG; every other run
#       reports `mtu: none`); then (a) and (b) run with 9014-byte frames
#       (MTU + Ethernet header) and random sizes up to 9014, guest -> tap
#       and tap -> guest, the latter with mergeable RX buffers (a frame
#       spans several 2 KiB buffers) and without (each buffer holds one).
#
# Topology: vnetd runs in NS_HOST (IPv6 off) so the kernel sends nothing
# through its tap before the tap is moved into the case's namespace (also
# IPv6 off); vnetd keeps its fd across the move. One vnetd per case, so
# its final stats JSON (written at SIGTERM) holds just that case.
#
# Usage: test_pktgen_vnetd_tap.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_FRAMES      N for (a) and (b) (default 100000)
#   VNET_TEST_RATE        pktgen --rate for (a), frames/s (default 200000; 0 = unpaced)
#   VNET_TEST_GSO_FRAMES  G for (c) (default 2000)
#   VNET_TEST_GSO_SIZE    S for (c) (default 16384)
#   VNET_TEST_VNETD_ARGS  more vnetd args, e.g. "--submit writev"
#   VNET_TEST_JUMBO       1: the jumbo cases (d) instead of (a)-(c)
#   VNET_TEST_PKTGEN_ARGS more pktgen args for every case, e.g. "--packed"
#                         (ctest runs the script twice: split, and packed
#                         rings; each pktgen report must name the format)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
FRAMES="$HERE/lib/pktgen_frames.py"
N=${VNET_TEST_FRAMES:-100000}
RATE=${VNET_TEST_RATE:-200000}
G=${VNET_TEST_GSO_FRAMES:-2000}
GSO_SIZE=${VNET_TEST_GSO_SIZE:-16384}
read -r -a VNETD_EXTRA <<<"${VNET_TEST_VNETD_ARGS:-}"
read -r -a PKTGEN_EXTRA <<<"${VNET_TEST_PKTGEN_ARGS:-}"
JUMBO=${VNET_TEST_JUMBO:-0}
EXPECT_MTU=none
[ "$JUMBO" = 1 ] && EXPECT_MTU=9000
RING_FORMAT=split
for arg in "${PKTGEN_EXTRA[@]}"; do
    [ "$arg" = --packed ] && RING_FORMAT=packed
done

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap)"
need_commands ip python3 tcpdump timeout
need_built "$VNETD" "$PKTGEN"

ID=$VT_ID
work_dir vnetd-pktgen-tap
NS_HOST=$(ns_name vpt-host)
netns_new "$NS_HOST"
# Different per run, reproducible within it: the checker regenerates pktgen's sizes.
SEED=$ID

# start_case LABEL: a namespace NS and a vnetd (VNETD_PID, socket SOCK,
# stats STATS) whose tap TAP has been moved into NS and is up.
start_case() {
    local label=$1
    NS=$(ns_name vpt "$label")
    TAP=$(link_name vpt "$label")
    SOCK="$WORK/$label.sock"
    STATS="$WORK/vnetd-$label.json"
    netns_new "$NS"
    start_vnetd "$WORK/vnetd-$label.log" --netns "$NS_HOST" --socket-path "$SOCK" \
        --tap "$TAP" --stats-file "$STATS" --control-socket "$WORK/vnetd-$label.ctl" "${VNETD_EXTRA[@]}"
    wait_for 10 "($label) vnetd did not listen" log_has "$WORK/vnetd-$label.log" "listening on"
    ip -n "$NS_HOST" link set "$TAP" netns "$NS" || fail "($label) moving $TAP into $NS"
    ip -n "$NS" link set "$TAP" up || fail "($label) $TAP up in $NS"
    if [ "$JUMBO" = 1 ]; then
        local mtu
        mtu=$(ip netns exec "$NS" cat "/sys/class/net/$TAP/mtu")
        [ "$mtu" = 9000 ] || fail "($label) $TAP has MTU $mtu, vnetd was given --mtu 9000"
    fi
}

# stop_vnetd LABEL: SIGTERM; it must exit 0 (final stats written) and its
# tap, which it created, must go away with it.
stop_vnetd() {
    stop_pid "$VNETD_PID" TERM || fail "($1) vnetd exited with status $? on SIGTERM"
    wait_for 3 "($1) $TAP still exists after vnetd exited" link_gone
}
link_gone() { ! ip -n "$NS" link show "$TAP" >/dev/null 2>&1; }

# start_capture LABEL: tcpdump in NS on TAP, frames the tap received only.
start_capture() {
    PCAP="$WORK/$1.pcap"
    bg_start --out "$WORK/tcpdump-$1.out" --err "$WORK/tcpdump-$1.err" \
        ip netns exec "$NS" tcpdump -i "$TAP" -Q in -n -s 0 -B 131072 -Z root -w "$PCAP"
    TCPDUMP_PID=$BG_PID
    wait_for 10 "($1) tcpdump did not start" log_has "$WORK/tcpdump-$1.err" "listening on"
}

# stop_capture LABEL: sets CAP_RECEIVED (frames the capture socket saw) and
# CAP_DROPPED (dropped by the kernel: the ring was full).
stop_capture() {
    # TPACKET_V3 hands a block to tcpdump when it is full or 1 s old: wait
    # for the last one, or the last frames stay in the ring at SIGINT.
    sleep 1.5
    stop_pid "$TCPDUMP_PID" INT
    local err="$WORK/tcpdump-$1.err" captured
    captured=$(grep -oE "^[0-9]+ packets captured" "$err" | awk '{print $1}')
    CAP_RECEIVED=$(grep -oE "^[0-9]+ packets received by filter" "$err" | awk '{print $1}')
    CAP_DROPPED=$(grep -oE "^[0-9]+ packets dropped by kernel" "$err" | awk '{print $1}')
    if [ -z "$captured" ] || [ -z "$CAP_RECEIVED" ] || [ -z "$CAP_DROPPED" ]; then
        fail "($1) no statistics from tcpdump"
    fi
    [ "$captured" = "$CAP_RECEIVED" ] ||
        fail "($1) tcpdump wrote $captured of the $CAP_RECEIVED frames it received"
}

# check_ring_format LABEL OUT: pktgen drove the rings it was asked for, and
# vnetd saw them so: its log names the format and the ring size pktgen used
# (its default, 256 descriptors).
check_ring_format() {
    check_equal "$1" "wanted_rings=$RING_FORMAT" "pktgen_ring-format=$(pktgen_value "$2" ring-format)"
    check_equal "$1" "offered_mtu=$EXPECT_MTU" "pktgen_mtu=$(pktgen_value "$2" mtu)"
    log_has "$WORK/vnetd-$1.log" "\] $RING_FORMAT rings" ||
        fail "($1) vnetd did not log $RING_FORMAT rings"
    log_has "$WORK/vnetd-$1.log" "queue pair 0 running \(rings 0 and 1, 256 entries\)" ||
        fail "($1) vnetd did not log queue pair 0 with 256 entries: $(grep 'queue pair 0' "$WORK/vnetd-$1.log")"
}

# case_tx LABEL SIZE-ARGS...: (a) guest -> tap, byte-exact.
case_tx() {
    local label=$1
    shift
    echo "== ($label) pktgen --tx $N frames ($*) -> vnetd -> tap, captured in a netns"
    start_case "$label"
    start_capture "$label"
    timeout 300 "$PKTGEN" --socket-path "$SOCK" --tx --count "$N" --rate "$RATE" --seed "$SEED" \
        --stats-interval 0 "${PKTGEN_EXTRA[@]}" "$@" >"$WORK/pktgen-$label.out" \
        2>"$WORK/pktgen-$label.err" || fail "($label) vnet-pktgen failed"
    check_ring_format "$label" "$WORK/pktgen-$label.out"
    stop_capture "$label"
    local tap_rx tap_rx_bytes tap_rx_dropped
    tap_rx=$(link_stat "$NS" "$TAP" rx_packets)
    tap_rx_bytes=$(link_stat "$NS" "$TAP" rx_bytes)
    tap_rx_dropped=$(link_stat "$NS" "$TAP" rx_dropped)
    stop_vnetd "$label"
    local check vm_rx vm_rx_bytes vm_rx_drops tap_tx tap_tx_bytes tap_tx_drops
    read -r vm_rx vm_rx_bytes vm_rx_drops tap_tx tap_tx_bytes tap_tx_drops < <(vnetd_stats "$STATS" \
        vm0.rx.packets vm0.rx.bytes vm0.rx.drops "$TAP.tx.packets" "$TAP.tx.bytes" "$TAP.tx.drops")
    check=$(python3 "$FRAMES" check-udp --pcap "$PCAP" --count "$N" --seed "$SEED" "$@" \
        2>"$WORK/check-$label.log")
    local check_rc=$?
    echo "($label) capture: $check"
    [ "$check_rc" = 0 ] || fail "($label) the capture is not what pktgen sent: $(cat "$WORK/check-$label.log")"
    local verified cap_bytes pg_tx pg_bytes
    verified=$(awk '{print $4}' <<<"$check")
    cap_bytes=$(awk '{print $6}' <<<"$check")
    pg_tx=$(pktgen_value "$WORK/pktgen-$label.out" tx-packets)
    pg_bytes=$(pktgen_value "$WORK/pktgen-$label.out" tx-bytes)
    check_equal "$label" "sent=$N" "pktgen_tx-packets=$pg_tx" "vnetd_vm0_rx=$vm_rx" \
        "vnetd_tap_tx=$tap_tx" "kernel_tap_rx_packets=$tap_rx" "tcpdump_received=$CAP_RECEIVED" \
        "verified=$verified"
    check_equal "$label" "pktgen_tx-bytes=$pg_bytes" "kernel_tap_rx_bytes=$tap_rx_bytes" \
        "captured_bytes=$cap_bytes"
    check_equal "$label" "vnetd_vm0_rx_bytes=$vm_rx_bytes" "vnetd_tap_tx_bytes=$tap_tx_bytes"
    check_vnetd_bytes "$label" "vm0 rx" "$vm_rx_bytes" "$pg_bytes" "$N"
    check_zero "$label" "vnetd_vm0_rx_drops=$vm_rx_drops" "vnetd_tap_tx_drops=$tap_tx_drops" \
        "kernel_tap_rx_dropped=$tap_rx_dropped" "tcpdump_dropped=$CAP_DROPPED"
}

# case_rx LABEL SIZE-ARGS...: (b) netns -> tap -> vnetd -> pktgen --rx.
case_rx() {
    local label=$1
    shift
    echo "== ($label) $N frames ($*) injected in the netns -> tap -> vnetd -> pktgen --rx"
    start_case "$label"
    ip -n "$NS" link set "$TAP" txqueuelen "$N" || fail "($label) txqueuelen $N"
    bg_start --out "$WORK/pktgen-$label.out" --err "$WORK/pktgen-$label.err" \
        timeout 300 "$PKTGEN" --socket-path "$SOCK" --rx --count "$N" --duration 240 --stats-interval 0 \
        "${PKTGEN_EXTRA[@]}" "${CASE_PKTGEN_ARGS[@]}"
    local pg_pid=$BG_PID
    wait_for 30 "($label) pktgen did not come up" log_has "$WORK/pktgen-$label.err" "link up"
    local sent
    sent=$(ip netns exec "$NS" timeout 300 python3 "$FRAMES" inject --ifname "$TAP" --count "$N" \
        --seed "$SEED" --dst-mac 02:00:00:00:00:01 --src-mac 02:00:00:00:00:02 "$@" \
        2>"$WORK/inject-$label.log") || fail "($label) the injector failed: $(cat "$WORK/inject-$label.log")"
    echo "($label) injector: $sent"
    # pktgen stops by itself after N frames (or at --duration: then counts differ).
    wait_until 60 exited "$pg_pid"
    stop_pid "$pg_pid" INT || fail "($label) vnet-pktgen --rx failed"
    local tap_tx tap_tx_bytes tap_tx_dropped
    tap_tx=$(link_stat "$NS" "$TAP" tx_packets)
    tap_tx_bytes=$(link_stat "$NS" "$TAP" tx_bytes)
    tap_tx_dropped=$(link_stat "$NS" "$TAP" tx_dropped)
    stop_vnetd "$label"
    local vm_tx vm_tx_bytes vm_tx_drops vtap_rx vtap_rx_bytes vtap_rx_drops
    read -r vm_tx vm_tx_bytes vm_tx_drops vtap_rx vtap_rx_bytes vtap_rx_drops < <(vnetd_stats "$STATS" \
        vm0.tx.packets vm0.tx.bytes vm0.tx.drops "$TAP.rx.packets" "$TAP.rx.bytes" "$TAP.rx.drops")
    local out="$WORK/pktgen-$label.out" key
    check_ring_format "$label" "$out"
    local injected injected_bytes
    injected=$(awk '{print $2}' <<<"$sent")
    injected_bytes=$(awk '{print $4}' <<<"$sent")
    echo "($label) pktgen: $(for key in rx-packets rx-verified rx-bad rx-lost rx-reordered rx-foreign; do
        printf '%s %s ' "$key" "$(pktgen_value "$out" "$key")"; done)"
    check_equal "$label" "wanted=$N" "injected=$injected" "kernel_tap_tx_packets=$tap_tx" \
        "vnetd_tap_rx=$vtap_rx" "vnetd_vm0_tx=$vm_tx" \
        "pktgen_rx-packets=$(pktgen_value "$out" rx-packets)" \
        "pktgen_rx-verified=$(pktgen_value "$out" rx-verified)"
    check_equal "$label" "injected_bytes=$injected_bytes" "kernel_tap_tx_bytes=$tap_tx_bytes" \
        "pktgen_rx-bytes=$(pktgen_value "$out" rx-bytes)"
    check_equal "$label" "vnetd_tap_rx_bytes=$vtap_rx_bytes" "vnetd_vm0_tx_bytes=$vm_tx_bytes"
    check_vnetd_bytes "$label" "$TAP rx" "$vtap_rx_bytes" "$injected_bytes" "$N"
    check_zero "$label" "pktgen_rx-bad=$(pktgen_value "$out" rx-bad)" \
        "pktgen_rx-lost=$(pktgen_value "$out" rx-lost)" \
        "pktgen_rx-foreign=$(pktgen_value "$out" rx-foreign)" \
        "kernel_tap_tx_dropped=$tap_tx_dropped" "vnetd_vm0_tx_drops=$vm_tx_drops" \
        "vnetd_tap_rx_drops=$vtap_rx_drops"
}

# case_gso LABEL: (c) TSO frames from the guest through the tap.
case_gso() {
    local label=$1
    local payload=$((GSO_SIZE - 54))
    echo "== ($label) pktgen --tx --gso: $G TCP frames of $GSO_SIZE B (MSS 1448) -> vnetd -> tap"
    start_case "$label"
    # An AF_PACKET capture with PACKET_VNET_HDR: it also records each skb's
    # GSO type and size, so a frame that lost its virtio_net_hdr on the way
    # (a plain 16 KB frame) is told apart from a GSO skb.
    PCAP="$WORK/$label.pcap"
    local hdrs="$WORK/$label.vnethdr" ready="$WORK/$label.ready"
    bg_start --out "$WORK/capture-$label.out" --err "$WORK/capture-$label.log" \
        ip netns exec "$NS" timeout 300 python3 "$FRAMES" capture --ifname "$TAP" --pcap "$PCAP" \
        --vnet-hdr "$hdrs" --count "$G" --timeout 10 --ready "$ready"
    local cap_pid=$BG_PID
    wait_for 10 "($label) the capture did not start" test -e "$ready"
    timeout 300 "$PKTGEN" --socket-path "$SOCK" --tx --gso --count "$G" --size "$GSO_SIZE" \
        --stats-interval 0 "${PKTGEN_EXTRA[@]}" >"$WORK/pktgen-$label.out" \
        2>"$WORK/pktgen-$label.err" || fail "($label) vnet-pktgen --gso failed"
    check_ring_format "$label" "$WORK/pktgen-$label.out"
    # The capture ends after G frames, or 10 s after the last one.
    wait_until 30 exited "$cap_pid"
    stop_pid "$cap_pid" INT || fail "($label) the capture failed: $(cat "$WORK/capture-$label.log")"
    local cap_dropped
    cap_dropped=$(awk '{print $4}' "$WORK/capture-$label.out")
    local tap_rx tap_rx_bytes tap_rx_dropped mtu
    tap_rx=$(link_stat "$NS" "$TAP" rx_packets)
    tap_rx_bytes=$(link_stat "$NS" "$TAP" rx_bytes)
    tap_rx_dropped=$(link_stat "$NS" "$TAP" rx_dropped)
    mtu=$(ip netns exec "$NS" cat "/sys/class/net/$TAP/mtu")
    stop_vnetd "$label"
    local vm_rx vm_rx_bytes vm_rx_drops tap_tx tap_tx_bytes tap_tx_drops
    read -r vm_rx vm_rx_bytes vm_rx_drops tap_tx tap_tx_bytes tap_tx_drops < <(vnetd_stats "$STATS" \
        vm0.rx.packets vm0.rx.bytes vm0.rx.drops "$TAP.tx.packets" "$TAP.tx.bytes" "$TAP.tx.drops")
    local check
    check=$(python3 "$FRAMES" check-tcp-stream --pcap "$PCAP" --count "$G" --size "$GSO_SIZE" \
        --vnet-hdr "$hdrs" --mtu "${mtu:-1500}" --mss 1448 2>"$WORK/check-$label.log")
    local check_rc=$?
    echo "($label) capture: $check"
    echo "($label) kernel tap rx_packets $tap_rx rx_bytes $tap_rx_bytes" \
        "($((tap_rx_bytes / (tap_rx > 0 ? tap_rx : 1))) B per skb)"
    [ "$check_rc" = 0 ] || fail "($label) the captured TCP stream is not what pktgen sent: $(cat "$WORK/check-$label.log")"
    local pg_tx pg_bytes
    pg_tx=$(pktgen_value "$WORK/pktgen-$label.out" tx-packets)
    pg_bytes=$(pktgen_value "$WORK/pktgen-$label.out" tx-bytes)
    check_equal "$label" "sent=$G" "pktgen_tx-packets=$pg_tx" "vnetd_vm0_rx=$vm_rx" "vnetd_tap_tx=$tap_tx"
    check_equal "$label" "sent_bytes=$((G * GSO_SIZE))" "pktgen_tx-bytes=$pg_bytes"
    check_equal "$label" "vnetd_vm0_rx_bytes=$vm_rx_bytes" "vnetd_tap_tx_bytes=$tap_tx_bytes"
    check_vnetd_bytes "$label" "vm0 rx" "$vm_rx_bytes" "$pg_bytes" "$G"
    # Whole GSO skbs or segments: either way every TCP payload byte is
    # counted once and every skb carries 54 bytes of headers.
    if [ -z "$tap_rx" ] || [ "$tap_rx" -lt "$G" ]; then
        fail "($label) kernel tap rx_packets = ${tap_rx:-missing}, expected at least $G"
    fi
    check_equal "$label" "tcp_payload_sent=$((G * payload))" \
        "kernel_tap_rx_bytes-54*rx_packets=$((tap_rx_bytes - 54 * tap_rx))"
    check_zero "$label" "vnetd_vm0_rx_drops=$vm_rx_drops" "vnetd_tap_tx_drops=$tap_tx_drops" \
        "kernel_tap_rx_dropped=$tap_rx_dropped" "capture_dropped=$cap_dropped"
}

CASE_PKTGEN_ARGS=()  # pktgen args of one rx case
if [ "$JUMBO" = 1 ]; then
    echo "== jumbo frames: vnetd ${VNETD_EXTRA[*]}, $RING_FORMAT rings, frames $N (seed $SEED)"
    case_tx d1 --size 9014
    case_tx d2 --size-range 60-9014
    case_rx d3 --size 9014
    CASE_PKTGEN_ARGS=(--mrg-rxbuf off)
    case_rx d4 --size-range 60-9014
    pass
fi
echo "== $RING_FORMAT rings, frames $N (seed $SEED), pktgen rate ${RATE:-0} pps, GSO $G x $GSO_SIZE B"
case_tx a1 --size-range 60-1514
case_tx a2 --size 64
case_rx b --size-range 60-1514
case_gso c

pass
