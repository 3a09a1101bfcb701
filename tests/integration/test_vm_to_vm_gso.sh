#!/bin/bash
# VM ↔ VM GSO through vnetd: two vnet-pktgen front ends on a cross-connect
# of two VM ports (config [[connect]] vm0 <-> vm1). The sender
# (vnet-pktgen --tx --gso) hands over G TCP/IPv4 frames of S bytes with
# NEEDS_CSUM and GSO TCPV4 (MSS 1448); the receiver checks what its RX ring
# got: lengths, IPv4 header checksum, the TCP checksum (in full, or the
# partial pseudo-header sum when the frame came with NEEDS_CSUM) and every
# payload byte against pktgen's pattern, stamped frames by sequence number
# and unstamped segments by their TCP sequence number.
#   (a) the receiver negotiates GUEST_CSUM + GUEST_TSO4 + MRG_RXBUF
#       (vnet-pktgen --rx --gso): every frame arrives whole, as sent.
#         pktgen tx == vnetd vm0 rx == vnetd vm1 tx == rx-packets
#           == rx-verified == G; rx-segments, rx-bad, rx-lost 0
#   (b) the receiver negotiates no offload (MRG_RXBUF only): vnetd cuts
#       every frame into K = ceil((S - 54) / 1448) TCP segments and
#       computes their checksums.
#         vnetd vm1 tx == rx-packets == rx-verified == G * K,
#         rx-segments == G * (K - 1); rx-bad, rx-lost 0
#   (c) as (b) without MRG_RXBUF: the segments land in one buffer each.
# No drops anywhere; the cross-connect waits for a full receiver, it does
# not drop.
#
# Usage: test_vm_to_vm_gso.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_GSO_FRAMES  G (default 2000)
#   VNET_TEST_GSO_SIZE    S (default 16384)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
G=${VNET_TEST_GSO_FRAMES:-2000}
S=${VNET_TEST_GSO_SIZE:-16384}
MSS=1448
K=$(((S - 54 + MSS - 1) / MSS))

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (vhost-user sockets under the test's directory)"
need_built "$VNETD" "$PKTGEN"
work_dir vnetd-vm-to-vm-gso

# run_case LABEL EXPECTED_PACKETS RX_ARGS...: one vnetd, a receiver on vm1
# with RX_ARGS, the sender on vm0; checks the counts.
run_case() {
    local label=$1 expected=$2
    shift 2
    local config="$WORK/$label.toml" stats="$WORK/vnetd-$label.json"
    local sock0="$WORK/$label-vm0.sock" sock1="$WORK/$label-vm1.sock"
    cat >"$config" <<EOF
[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "$sock0"

[[port]]
name = "vm1"
type = "vhost-user"
socket_path = "$sock1"

[[connect]]
ports = ["vm0", "vm1"]
EOF
    echo "== ($label) pktgen --tx --gso: $G frames of $S B -> vnetd -> pktgen --rx $*"
    bg_start --log "$WORK/vnetd-$label.log" "$VNETD" --config "$config" --stats-file "$stats" \
        --control-socket ""
    local vnetd_pid=$BG_PID
    wait_for 10 "($label) vnetd did not listen on $sock1" log_has "$WORK/vnetd-$label.log" \
        "listening on.*$label-vm1.sock"
    bg_start --out "$WORK/rx-$label.out" --err "$WORK/rx-$label.err" timeout 300 "$PKTGEN" \
        --socket-path "$sock1" --rx --count "$expected" --duration 120 --stats-interval 0 "$@"
    local rx_pid=$BG_PID
    wait_for 20 "($label) the receiver did not come up" log_has "$WORK/rx-$label.err" "link up"
    timeout 300 "$PKTGEN" --socket-path "$sock0" --tx --gso --mss "$MSS" --count "$G" --size "$S" \
        --stats-interval 0 >"$WORK/tx-$label.out" 2>"$WORK/tx-$label.err" ||
        fail "($label) the sender failed: $(tail -n 5 "$WORK/tx-$label.err")"
    wait_until 60 exited "$rx_pid"
    stop_pid "$rx_pid" INT || fail "($label) the receiver failed: $(tail -n 5 "$WORK/rx-$label.err")"
    stop_pid "$vnetd_pid" TERM || fail "($label) vnetd exited with status $? on SIGTERM"

    local tx rx verified segments bad lost foreign
    tx=$(pktgen_value "$WORK/tx-$label.out" tx-packets)
    rx=$(pktgen_value "$WORK/rx-$label.out" rx-packets)
    verified=$(pktgen_value "$WORK/rx-$label.out" rx-verified)
    segments=$(pktgen_value "$WORK/rx-$label.out" rx-segments)
    bad=$(pktgen_value "$WORK/rx-$label.out" rx-bad)
    lost=$(pktgen_value "$WORK/rx-$label.out" rx-lost)
    foreign=$(pktgen_value "$WORK/rx-$label.out" rx-foreign)
    local vm0_rx vm0_drops vm1_tx vm1_drops
    read -r vm0_rx vm0_drops vm1_tx vm1_drops < <(vnetd_stats "$stats" \
        vm0.rx.packets vm0.rx.drops vm1.tx.packets vm1.tx.drops)
    check_equal "$label" "sent=$G" "pktgen_tx-packets=$tx" "vnetd_vm0_rx=$vm0_rx"
    check_equal "$label" "expected=$expected" "vnetd_vm1_tx=$vm1_tx" "pktgen_rx-packets=$rx" \
        "pktgen_rx-verified=$verified"
    check_equal "$label" "segments_after_the_first=$((expected - G))" "pktgen_rx-segments=$segments"
    check_zero "$label" "pktgen_rx-bad=$bad" "pktgen_rx-lost=$lost" "pktgen_rx-foreign=$foreign" \
        "vnetd_vm0_rx_drops=$vm0_drops" "vnetd_vm1_tx_drops=$vm1_drops"
    ok "($label) $rx frames verified byte for byte after the receiver's view"
}

run_case whole "$G" --gso
run_case segmented $((G * K))
run_case segmented-single-buffers $((G * K)) --mrg-rxbuf off

pass
