#!/bin/bash
# User-space GRO on a tap -> tap cross-connect, checked end to end with real
# TCP: [receiver in NS_A] <-> tap A <-> vnetd <-> tap B <-> [sender in NS_B].
#
# The sender's tap has TSO and GSO off (ethtool in NS_B), so its stack hands
# vnetd one MSS-sized segment per read, with a partial checksum (vnetd set
# TUN_F_CSUM on both taps, dataplane/forward_path.cpp). With --gro on, vnetd
# merges each burst's consecutive segments into one GSO write to tap A.
#
# For each of IPv4 and IPv6, with GRO on and then off:
#   - a byte stream of S MiB (python, seeded) goes NS_B -> NS_A; the receiver
#     hashes what it got: sha256 and length must equal the sender's (the
#     kernel trusts a partial checksum on local delivery, so only an
#     application check can prove a merged frame carried the right bytes);
#   - counting identity: every segment vnetd read from tap B was written to
#     tap A, alone or inside a merged frame:
#       tapB.rx.packets == tapA.tx.packets - gro_frames + gro_segments
#     and tap A's kernel rx_packets == vnetd's tapA.tx.packets (frames);
#   - GRO on: gro_frames > 0 and gro_segments >= 2 * gro_frames;
#     GRO off: gro_frames == gro_segments == 0.
# Then one iperf3 run (3 s) per setting, for the record (no timing asserted).
#
# Usage: test_gro_tap_to_tap.sh BUILD_DIR   (as root)
#   VNET_TEST_STREAM_MIB   S (default 64)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
MIB=${VNET_TEST_STREAM_MIB:-64}

# shellcheck source=lib/common.sh
source "$HERE/lib/common.sh"
# shellcheck source=lib/tcp_stream.sh
source "$HERE/lib/tcp_stream.sh"
build_programs "${1:-}"
work_dir vnet-gro

[ "$(id -u)" = 0 ] || fail "needs root"
[ -x "$VNETD" ] || fail "no $VNETD (build first)"
command -v ethtool >/dev/null || fail "ethtool missing (scripts/install-deps.sh installs it)"
command -v iperf3 >/dev/null || fail "iperf3 missing (scripts/install-deps.sh installs it)"

TAG=$VT_ID
TAP_A=$(link_name vga)
TAP_B=$(link_name vgb)
# vnetd runs in NS_HOST (IPv6 off), where its taps are born: in a namespace
# with IPv6 the kernel sends an MLD report or a router solicitation through
# a new tap at once, and a frame read from tap B while tap A is on its way
# into its namespace (down) fails to be written: one read segment short of
# the counting identity below.
NS_HOST=$(ns_name vgro-host)
netns_new "$NS_HOST"

# run_case GRO FAMILY: one vnetd, one verified stream, the counter checks.
run_case() {
    local gro=$1 family=$2 label="gro $1, IPv$2"
    local ns_a ns_b stats="$WORK/stats-$gro$family.json"
    ns_a=$(ns_name vgro-a "$gro$family")
    ns_b=$(ns_name vgro-b "$gro$family")
    # IPv6 on (the IPv6 case needs it) but no DAD delay.
    netns_new "$ns_a" --ipv6
    netns_new "$ns_b" --ipv6

    # --persist: the taps outlive vnetd, so the kernel's counters can be read
    # after vnetd's final stats, with nothing in flight.
    start_vnetd "$WORK/vnetd-$gro$family.log" --netns "$NS_HOST" --tap "$TAP_A" --tap "$TAP_B" --persist \
        --gro "$gro" --stats-file "$stats" --control-socket "$WORK/vnetd-$gro$family.ctl" --log-level info
    local vnetd=$VNETD_PID
    wait_for 10 "($label) vnetd did not start" log_has "$WORK/vnetd-$gro$family.log" "cross-connect"

    ip -n "$NS_HOST" link set "$TAP_A" netns "$ns_a" || fail "($label) move $TAP_A"
    ip -n "$NS_HOST" link set "$TAP_B" netns "$ns_b" || fail "($label) move $TAP_B"
    ip -n "$ns_a" addr add 10.77.0.1/24 dev "$TAP_A"
    ip -n "$ns_b" addr add 10.77.0.2/24 dev "$TAP_B"
    ip -n "$ns_a" addr add fd77::1/64 dev "$TAP_A" nodad
    ip -n "$ns_b" addr add fd77::2/64 dev "$TAP_B" nodad
    ip -n "$ns_a" link set "$TAP_A" up
    ip -n "$ns_b" link set "$TAP_B" up
    ip netns exec "$ns_b" ethtool -K "$TAP_B" tso off gso off >/dev/null 2>&1 ||
        fail "($label) ethtool -K $TAP_B tso off gso off"

    local dst=10.77.0.1
    [ "$family" = 6 ] && dst=fd77::1
    bg_start ip netns exec "$ns_a" bash -c \
        "$(declare -f stream_receiver); stream_receiver 5201 $family $WORK/recv-$gro$family"
    local receiver=$BG_PID
    local sent
    sent=$(ip netns exec "$ns_b" bash -c "$(declare -f stream_sender); stream_sender $dst 5201 $MIB $TAG") ||
        fail "($label) sender failed"
    wait "$receiver" || fail "($label) receiver failed"
    forget "$receiver"
    local received
    received=$(cat "$WORK/recv-$gro$family")
    check_equal "$label: stream length and sha256" "sent=$sent" "received=$received"

    # One iperf3 run for the record.
    bg_start --log /dev/null ip netns exec "$ns_a" iperf3 -s -1 -p 5202
    local server=$BG_PID
    sleep 0.3
    local gbps
    gbps=$(ip netns exec "$ns_b" iperf3 -c "$dst" -p 5202 -t 3 -J 2>/dev/null |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9, 2))') ||
        fail "($label) iperf3 failed"
    wait "$server"
    forget "$server"
    echo "($label) iperf3 single stream: $gbps Gbit/s"

    stop_pid "$vnetd" TERM || fail "($label) vnetd exit status $?"
    local kernel_a_rx
    kernel_a_rx=$(link_stat "$ns_a" "$TAP_A" rx_packets)
    local b_rx a_tx frames segments
    read -r b_rx a_tx frames segments < <(vnetd_stats "$stats" "$TAP_B.rx.packets" \
        "$TAP_A.tx.packets" "$TAP_A.tx.gro_frames" "$TAP_A.tx.gro_segments")
    echo "($label) tap B read $b_rx, tap A wrote $a_tx frames, $frames merged of $segments segments"
    check_equal "$label: segments read == frames written - merged frames + merged segments" \
        "read=$b_rx" "written=$((a_tx - frames + segments))"
    check_equal "$label: kernel tap A rx_packets == vnetd tap A tx packets" \
        "kernel=$kernel_a_rx" "vnetd=$a_tx"
    if [ "$gro" = on ]; then
        [ "$frames" -gt 0 ] || fail "($label) no frame was merged"
        [ "$segments" -ge $((2 * frames)) ] || fail "($label) $segments segments in $frames frames"
        echo "($label) mean segments per merged frame: $((segments / frames))"
    else
        check_zero "$label: no merging" "gro_frames=$frames" "gro_segments=$segments"
    fi
    ip -n "$ns_a" link del "$TAP_A"
    ip -n "$ns_b" link del "$TAP_B"
    ip netns del "$ns_a"
    ip netns del "$ns_b"
}

for gro in on off; do
    for family in 4 6; do
        run_case "$gro" "$family"
    done
done
pass "GRO tap -> tap streams verified (IPv4, IPv6; GRO on and off)"
