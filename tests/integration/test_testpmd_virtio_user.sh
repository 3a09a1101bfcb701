#!/bin/bash
# vnetd against DPDK testpmd's virtio-user front end (net_virtio_user), a
# virtio driver nobody here wrote. Packet counts must agree exactly on every
# side: testpmd's final forward stats, vnetd's stats JSON, the kernel's
# counters of the tap (in its own network namespace) and a raw-socket peer.
#
#   (a) vnetd server; testpmd txonly (64 B) for a few seconds. The tap was
#       moved into a fresh netns (vnetd keeps its fd, and runs in a netns of
#       its own) and is up there.
#       testpmd TX-packets == vnetd vm0 rx == vnetd tap tx
#                          == tap rx_packets + rx_dropped (kernel)
#   (b) the same with vnetd as client (run inside the netns, so its tap is
#       born there) and testpmd server=1, which listens first.
#   (c) vnetd server; testpmd macswap. N frames are sent from the netns into
#       the tap (AF_PACKET, lib/afpacket_reflect_check.py, at most 64 in
#       flight), vnetd puts them in the guest's RX ring, testpmd swaps the
#       MACs and sends them back, vnetd writes them to the tap, and the netns
#       side captures them. N == tap tx (kernel) == vnetd tap rx == vm0 tx
#       == testpmd RX == testpmd TX == vm0 rx == vnetd tap tx
#       == tap rx_packets (kernel) == frames captured.
#
# testpmd's TX-packets counts what rte_eth_tx_burst put in the ring (what
# did not fit is TX-dropped and never reaches vnetd). IPv6 is disabled in
# the netns, so the stack sends nothing of its own through the tap and every
# count is testpmd's or ours.
#
# CPUs (2 here): testpmd's forwarding lcore busy-polls, so it gets a CPU of
# its own (--lcores 0@1,1@0: main lcore 0, which only prints stats, on
# CPU 1; forwarding lcore 1 on CPU 0); vnetd's worker runs in its default
# mode (adaptive: spins only while packets keep coming, sleeps when idle)
# pinned to CPU 1 with --cpu 1. Two busy pollers on one
# CPU collapse (peer-baselines.md, pitfall 1): with vnetd --mode poll,
# measured 21-102 kpps whatever the layout. Measured txonly 64 B into the
# tap (2 runs each, while parallel compiles kept the load average at 5-10,
# so only the order is telling): this layout 125-131 kpps; testpmd -l 0,1
# (forwarding lcore on vnetd's CPU) 254-268 kpps, since event-mode vnetd
# preempts the poller when kicked. Counts are exact either way: the test
# checks counts, never rates.
#
# Memory: --no-huge -m 512 by default (memfd-backed, works with virtio-user:
# dpdk-vhost.md §5), so nothing is reserved or left in /dev/hugepages.
# VNET_TEST_HUGEPAGES=1 uses 2 MiB hugepages instead (--in-memory
# --single-file-segments -m 512; reserves 512 pages if none are).
#
# Usage: test_testpmd_virtio_user.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_SECONDS   txonly run time of (a) and (b) (default 3)
#   VNET_TEST_FRAMES    frames reflected in (c) (default 20000)
#   VNET_TEST_FRAME_SIZE  bytes per frame, 60..1514 (default 64)
#   VNET_TEST_VDEV_ARGS   more virtio-user args, e.g. mrg_rxbuf=0,in_order=0
#   VNET_TEST_VNETD_ARGS  more vnetd args, e.g. "--submit writev --mode poll"
#   VNET_TEST_EXPECT_LOG  an ERE every vnetd log must match (test_testpmd_packed.sh)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REFLECT_CHECK="$HERE/lib/afpacket_reflect_check.py"
TESTPMD=$(command -v dpdk-testpmd || true)
SECONDS_TX=${VNET_TEST_SECONDS:-3}
N_FRAMES=${VNET_TEST_FRAMES:-20000}
FRAME_SIZE=${VNET_TEST_FRAME_SIZE:-64}
read -r -a VNETD_EXTRA <<<"${VNET_TEST_VNETD_ARGS:-}"

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap, DPDK EAL)"
[ -n "$TESTPMD" ] || skip "dpdk-testpmd not found (Debian package dpdk)"
need_commands ip python3 taskset timeout
need_built "$VNETD"

work_dir vnetd-testpmd
VT_FAIL_LINES=40
TAP=$(link_name vtp)
# vnetd runs in NS_HOST, a stand-in for the host with IPv6 off: a tap is up
# from the moment vnetd creates it, and in a namespace with IPv6 the kernel
# sends an MLD report or a DAD probe through it before the test can move it
# (the tap's counters and its queue move along, and the guest would get it).
NS_HOST=$(ns_name vnetd-vu-host)
HP=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages

VNETD_CPU=$LAST_CPU
PMD_CPU=0
# testpmd: lcore 0 (main: stats, signals) shares vnetd's CPU, lcore 1
# (forwarding, busy-polls) has CPU 0 to itself.
LCORES="0@$VNETD_CPU,1@$PMD_CPU"
if [ "${VNET_TEST_HUGEPAGES:-0}" = 1 ]; then
    if [ "$(cat "$HP" 2>/dev/null || echo 0)" = 0 ]; then
        echo 512 >"$HP" || skip "cannot reserve hugepages"
        restore_hugepages() { echo 0 >"$HP"; }
        on_exit restore_hugepages
    fi
    DPDK_MEM=(--in-memory --single-file-segments -m 512)
fi
# A 256-entry ring needs few mbufs; testpmd's default pool does not fit 512 MiB.
PMD=(--nb-cores=1 --rxq=1 --txq=1 --rxd=256 --txd=256 --total-num-mbufs=16384 --stats-period 1)

# testpmd_fwd LOG FIELD: FIELD (RX-packets, TX-packets, RX-dropped,
# TX-dropped) from the final "Forward statistics for port 0" in LOG.
testpmd_fwd() {
    sed -n '/Forward statistics for port 0/,/-----------------------/p' "$1" |
        grep -oE "$2: +[0-9]+" | tail -n 1 | grep -oE '[0-9]+$'
}

# start_pinned_vnetd LOG STATS [netns NS] -- ARG...: vnetd on the tap, pinned
# to VNETD_CPU (taskset and its worker), its control socket beside LOG.
# VIRTIO_F_IN_ORDER (bit 35): virtio-user asks for it unless in_order=0 and
# vnetd offers it, so in-order is what ran (vnetd completes oldest first; a
# packed TX burst comes back as one used descriptor).
expect_in_order() {
    local hex want=1
    [[ ",${VNET_TEST_VDEV_ARGS:-}," == *",in_order=0,"* ]] && want=0
    hex=$(grep -oE 'guest features 0x[0-9a-f]+' "$2" | tail -n 1 | grep -oE '0x[0-9a-f]+')
    [ -n "$hex" ] || fail "($1) vnetd logged no guest features"
    [ $(((hex >> 35) & 1)) = "$want" ] ||
        fail "($1) VIRTIO_F_IN_ORDER negotiated: $(((hex >> 35) & 1)), expected $want (guest features $hex)"
    echo "($1) guest features $hex: VIRTIO_F_IN_ORDER $want"
}

start_pinned_vnetd() {
    local log=$1 stats=$2
    shift 2
    local prefix=()
    if [ "$1" = netns ]; then
        prefix=(ip netns exec "$2")
        shift 2
    fi
    shift  # --
    bg_start --log "$log" "${prefix[@]}" taskset -c "$VNETD_CPU" "$VNETD" --tap "$TAP" \
        --cpu "$VNETD_CPU" --stats-file "$stats" --control-socket "${log%.log}.ctl" "${VNETD_EXTRA[@]}" "$@"
    VNETD_PID=$BG_PID
}

# finish_txonly CASE NS: testpmd (pid TESTPMD_PID, forwarding) sends for
# SECONDS_TX and is stopped with SIGINT; the tap's counters are read in NS;
# vnetd is stopped (its stats file is final then); the counts are compared.
finish_txonly() {
    local label=$1 ns=$2
    sleep "$SECONDS_TX"
    stop_pid "$TESTPMD_PID" INT
    grep -q "Bye" "$WORK/testpmd-$label.log" || fail "($label) testpmd did not exit cleanly"
    local pmd_tx pmd_rx tap_rx tap_rx_dropped
    pmd_tx=$(testpmd_fwd "$WORK/testpmd-$label.log" TX-packets)
    pmd_rx=$(testpmd_fwd "$WORK/testpmd-$label.log" RX-packets)
    # testpmd has let go of the rings (GET_VRING_BASE): nothing more arrives.
    tap_rx=$(link_stat "$ns" "$TAP" rx_packets)
    tap_rx_dropped=$(link_stat "$ns" "$TAP" rx_dropped)
    stop_pid "$VNETD_PID" TERM
    local stats="$WORK/vnetd-$label.json"
    expect_vnetd_log "$label" "$WORK/vnetd-$label.log"
    expect_in_order "$label" "$WORK/vnetd-$label.log"
    [ -n "$pmd_tx" ] && [ "$pmd_tx" -gt 0 ] || fail "($label) testpmd sent nothing"
    # On SIGINT testpmd stops forwarding and, within a millisecond, disables
    # and stops the rings (SET_VRING_ENABLE 0, GET_VRING_BASE); what is still
    # in the TX ring then stays there, untaken (a restart from the returned
    # index would send it). vnetd logs that number; testpmd counted it as
    # sent. It is at most the ring size.
    local untaken
    untaken=$(grep -oE "ring 1 stopped at avail index [0-9]+: [0-9]+" "$WORK/vnetd-$label.log" |
        awk -F': ' '{ n += $2 } END { print n + 0 }')
    [ "$untaken" -le 256 ] || fail "($label) $untaken packets left in a 256-entry ring"
    local vm_rx vm_rx_drops tap_tx tap_tx_drops
    vm_rx=$(vnetd_stats "$stats" vm0.rx.packets)
    vm_rx_drops=$(vnetd_stats "$stats" vm0.rx.drops)
    tap_tx=$(vnetd_stats "$stats" "$TAP.tx.packets")
    tap_tx_drops=$(vnetd_stats "$stats" "$TAP.tx.drops")
    echo "($label) untaken in the TX ring at testpmd's stop: $untaken;" \
        "vnetd drops: vm0 rx $vm_rx_drops, $TAP tx $tap_tx_drops;" \
        "kernel tap rx_packets $tap_rx rx_dropped $tap_rx_dropped;" \
        "testpmd RX-packets $pmd_rx, TX-dropped (ring full) $(testpmd_fwd "$WORK/testpmd-$label.log" TX-dropped)"
    # Every packet testpmd sent is accounted for: taken by vnetd (forwarded
    # or dropped under a named reason) or left in the ring at the stop.
    check_equal "$label" "testpmd_TX-packets=$pmd_tx" \
        "vnetd_vm0_rx+drops+untaken_at_stop=$((vm_rx + vm_rx_drops + untaken))"
    [ "$vm_rx_drops" = 0 ] || fail "($label) vnetd dropped $vm_rx_drops packets of the guest's"
    [ "$tap_tx_drops" = 0 ] || fail "($label) vnetd could not write $tap_tx_drops packets to the tap"
    # Every packet vnetd took reached the tap.
    check_equal "$label" "vnetd_vm0_rx=$vm_rx" "vnetd_tap_tx=$tap_tx" \
        "kernel_tap_rx_packets+rx_dropped=$((tap_rx + tap_rx_dropped))"
    [ "$pmd_rx" = 0 ] || fail "($label) testpmd received $pmd_rx frames: the netns was not silent"
}

VDEV_BASE="net_virtio_user0,queues=1,queue_size=256,mac=02:00:00:00:00:01"
if [ -n "${VNET_TEST_VDEV_ARGS:-}" ]; then
    VDEV_BASE+=",$VNET_TEST_VDEV_ARGS"
fi

echo "== (a) vnetd server, tap moved into a netns; testpmd virtio-user txonly ($FRAME_SIZE B)"
NS_A=$(ns_name vnetd-vu-a)
netns_new "$NS_A"
netns_new "$NS_HOST"
SOCK_A="$WORK/a.sock"
start_pinned_vnetd "$WORK/vnetd-a.log" "$WORK/vnetd-a.json" netns "$NS_HOST" -- --socket-path "$SOCK_A"
wait_for 10 "(a) vnetd did not listen" log_has "$WORK/vnetd-a.log" "listening on"
ip -n "$NS_HOST" link set "$TAP" netns "$NS_A" || fail "(a) moving $TAP into $NS_A"
ip -n "$NS_A" link set "$TAP" up || fail "(a) $TAP up in $NS_A"
dpdk_eal a "$LCORES"
bg_start --log "$WORK/testpmd-a.log" "$TESTPMD" "${EAL_ARGS[@]}" --vdev "$VDEV_BASE,path=$SOCK_A" \
    -- "${PMD[@]}" --forward-mode=txonly --txpkts="$FRAME_SIZE"
TESTPMD_PID=$BG_PID
wait_for 30 "(a) testpmd did not start forwarding" log_has "$WORK/testpmd-a.log" "Port statistics"
finish_txonly a "$NS_A"

echo "== (b) vnetd client in a netns; testpmd virtio-user server=1 txonly ($FRAME_SIZE B)"
NS_B=$(ns_name vnetd-vu-b)
netns_new "$NS_B"
SOCK_B="$WORK/b.sock"
dpdk_eal b "$LCORES"
bg_start --log "$WORK/testpmd-b.log" "$TESTPMD" "${EAL_ARGS[@]}" \
    --vdev "$VDEV_BASE,path=$SOCK_B,server=1" -- "${PMD[@]}" --forward-mode=txonly --txpkts="$FRAME_SIZE"
TESTPMD_PID=$BG_PID
wait_for 30 "(b) testpmd did not listen on $SOCK_B" test -S "$SOCK_B"
start_pinned_vnetd "$WORK/vnetd-b.log" "$WORK/vnetd-b.json" netns "$NS_B" -- --socket-path "$SOCK_B" --client
wait_for 30 "(b) testpmd did not start forwarding" log_has "$WORK/testpmd-b.log" "Port statistics"
finish_txonly b "$NS_B"

echo "== (c) vnetd server; testpmd virtio-user macswap reflects $N_FRAMES frames sent from the netns"
NS_C=$(ns_name vnetd-vu-c)
netns_new "$NS_C"
SOCK_C="$WORK/c.sock"
start_pinned_vnetd "$WORK/vnetd-c.log" "$WORK/vnetd-c.json" netns "$NS_HOST" -- --socket-path "$SOCK_C"
wait_for 10 "(c) vnetd did not listen" log_has "$WORK/vnetd-c.log" "listening on"
ip -n "$NS_HOST" link set "$TAP" netns "$NS_C" || fail "(c) moving $TAP into $NS_C"
ip -n "$NS_C" link set "$TAP" up || fail "(c) $TAP up in $NS_C"
dpdk_eal c "$LCORES"
bg_start --log "$WORK/testpmd-c.log" "$TESTPMD" "${EAL_ARGS[@]}" --vdev "$VDEV_BASE,path=$SOCK_C" \
    -- "${PMD[@]}" --forward-mode=macswap
TESTPMD_PID=$BG_PID
wait_for 30 "(c) testpmd did not start forwarding" log_has "$WORK/testpmd-c.log" "Port statistics"
ip netns exec "$NS_C" taskset -c "$VNETD_CPU" timeout 120 python3 "$REFLECT_CHECK" \
    --ifname "$TAP" --count "$N_FRAMES" --size "$FRAME_SIZE" --dst-mac 02:00:00:00:00:01 \
    >"$WORK/reflect-c.out" 2>"$WORK/reflect-c.log"
REFLECT_RC=$?
cat "$WORK/reflect-c.out"
stop_pid "$TESTPMD_PID" INT
grep -q "Bye" "$WORK/testpmd-c.log" || fail "(c) testpmd did not exit cleanly"
TAP_TX_C=$(link_stat "$NS_C" "$TAP" tx_packets)
TAP_RX_C=$(link_stat "$NS_C" "$TAP" rx_packets)
TAP_RX_DROPPED_C=$(link_stat "$NS_C" "$TAP" rx_dropped)
TAP_TX_DROPPED_C=$(link_stat "$NS_C" "$TAP" tx_dropped)
stop_pid "$VNETD_PID" TERM
STATS_C="$WORK/vnetd-c.json"
expect_vnetd_log c "$WORK/vnetd-c.log"
expect_in_order c "$WORK/vnetd-c.log"
read -r _ SENT_C _ GOT_C _ _ _ _ _ _ <"$WORK/reflect-c.out"
check_equal c "sent=$SENT_C" \
    "kernel_tap_tx_packets=$TAP_TX_C" \
    "vnetd_tap_rx=$(vnetd_stats "$STATS_C" "$TAP.rx.packets")" \
    "vnetd_vm0_tx=$(vnetd_stats "$STATS_C" vm0.tx.packets)" \
    "testpmd_RX-packets=$(testpmd_fwd "$WORK/testpmd-c.log" RX-packets)" \
    "testpmd_TX-packets=$(testpmd_fwd "$WORK/testpmd-c.log" TX-packets)" \
    "vnetd_vm0_rx=$(vnetd_stats "$STATS_C" vm0.rx.packets)" \
    "vnetd_tap_tx=$(vnetd_stats "$STATS_C" "$TAP.tx.packets")" \
    "kernel_tap_rx_packets=$TAP_RX_C" \
    "captured=$GOT_C"
echo "(c) kernel tap rx_dropped $TAP_RX_DROPPED_C tx_dropped $TAP_TX_DROPPED_C;" \
    "vnetd drops: tap rx $(vnetd_stats "$STATS_C" "$TAP.rx.drops") vm0 tx $(vnetd_stats "$STATS_C" vm0.tx.drops)" \
    "vm0 rx $(vnetd_stats "$STATS_C" vm0.rx.drops) tap tx $(vnetd_stats "$STATS_C" "$TAP.tx.drops")"
[ "$SENT_C" = "$N_FRAMES" ] || fail "(c) sent $SENT_C of $N_FRAMES"
[ "$REFLECT_RC" = 0 ] || fail "(c) the reflect check failed: $(cat "$WORK/reflect-c.log")"
[ "$TAP_RX_DROPPED_C" = 0 ] && [ "$TAP_TX_DROPPED_C" = 0 ] || fail "(c) the tap dropped frames"

pass
