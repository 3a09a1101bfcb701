#!/bin/bash
# Multiqueue against a front end nobody here wrote: DPDK testpmd's
# virtio-user with queues=N drives vnetd's VM port (VIRTIO_NET_F_MQ,
# SET_VRING_ENABLE per ring), cross-connected to a tap that vnetd opens
# IFF_MULTI_QUEUE. Queue pair q of the guest is tap queue q; only the tap
# queues of running queue pairs are attached.
#
#   (a) queues=2, one worker: testpmd txonly. For each queue q:
#       testpmd's "Forward Stats for RX Port= 0/Queue= q" TX-packets
#       == vnetd vm0 queue q rx (+ what testpmd left untaken in that ring)
#       == vnetd tap queue q tx; the sum == the tap's kernel rx_packets +
#       rx_dropped; the tap has exactly 2 queues attached while it runs.
#   (b) queues=4, two workers (--cpu 0 --cpu 1): the same per-queue
#       identities with 4 queues, every queue carried traffic, the tap has 4
#       queues attached, and vnetd placed the queue pairs on both workers.
#   (c) queues=2, testpmd macswap: N frames sent from the netns into the tap
#       come back, counted equal on every side (summed over the queues).
#   (d) after testpmd is gone, the tap is back to 1 attached queue.
#
# CPUs and memory as in test_testpmd_virtio_user.sh: testpmd's forwarding
# lcore on CPU 0, vnetd's worker(s) in the default (adaptive) mode, --no-huge -m 512.
#
# Usage: test_testpmd_multiqueue.sh BUILD_DIR   (as root)
#   VNET_TEST_VDEV_ARGS   more virtio-user args, e.g. packed_vq=1
#   VNET_TEST_EXPECT_LOG  an ERE every vnetd log must match (test_testpmd_packed.sh)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REFLECT_CHECK="$HERE/lib/afpacket_reflect_check.py"
TESTPMD=$(command -v dpdk-testpmd || true)
SECONDS_TX=${VNET_TEST_SECONDS:-3}
N_FRAMES=${VNET_TEST_FRAMES:-20000}
VDEV_EXTRA=${VNET_TEST_VDEV_ARGS:+,$VNET_TEST_VDEV_ARGS}

# shellcheck source=lib/common.sh
source "$HERE/lib/common.sh"
build_programs "${1:-}"
work_dir vnetd-mq

[ "$(id -u)" = 0 ] || fail "needs root (netns, tap, DPDK EAL)"
[ -n "$TESTPMD" ] || fail "dpdk-testpmd not found (scripts/install-deps.sh installs dpdk-dev)"
need_built "$VNETD"

TAP=$(link_name vmq)
NS_HOST=$(ns_name vnetd-mq h)
NS=$(ns_name vnetd-mq n)
netns_new "$NS_HOST"
netns_new "$NS"

# vnetd_queue FILE PORT QUEUE DIR FIELD: one per-queue counter.
vnetd_queue() { vnetd_stats "$1" "$2.$4.$5.$3"; }

# testpmd_stream LOG QUEUE FIELD: FIELD of testpmd's per-stream forward
# stats for queue QUEUE (printed at stop when there are several streams).
testpmd_stream() {
    sed -n "/Forward Stats for RX Port= 0\/Queue= *$2 ->/,/^ *$/p" "$1" |
        grep -oE "$3: +[0-9]+" | head -n 1 | grep -oE '[0-9]+$'
}

# testpmd_port LOG FIELD: FIELD of the final "Forward statistics for port 0".
testpmd_port() {
    sed -n '/Forward statistics for port 0/,/-----------------------/p' "$1" |
        grep -oE "$2: +[0-9]+" | tail -n 1 | grep -oE '[0-9]+$'
}

# attached_queues: tap queues the kernel steers to (tun sets the device's
# real queue count to the attached queues).
attached_queues() {
    ip netns exec "$NS" sh -c "ls /sys/class/net/$TAP/queues | grep -c '^tx-'"
}

# untaken_in_ring LOG RING: packets testpmd queued in TX ring RING that vnetd
# had not taken when testpmd stopped the rings (vnetd logs the number).
untaken_in_ring() {
    grep -oE "ring $2 stopped at avail index [0-9]+: [0-9]+" "$1" |
        awk -F': ' '{ n += $2 } END { print n + 0 }'
}

# start_case LABEL QUEUES MODE [vnetd args]: vnetd (its tap moved into NS),
# then testpmd with QUEUES queue pairs in forward MODE.
start_case() {
    local label=$1 queues=$2 mode=$3
    shift 3
    SOCK="$WORK/$label.sock"
    start_vnetd "$WORK/vnetd-$label.log" --netns "$NS_HOST" --tap "$TAP" \
        --socket-path "$SOCK" --stats-file "$WORK/vnetd-$label.json" --control-socket "$WORK/vnetd-$label.ctl" "$@"
    wait_for 10 "($label) vnetd did not listen" log_has "$WORK/vnetd-$label.log" "listening on"
    ip -n "$NS_HOST" link set "$TAP" netns "$NS" || fail "($label) moving $TAP into $NS"
    ip -n "$NS" link set "$TAP" up || fail "($label) $TAP up"
    [ "$(attached_queues)" = 1 ] || fail "($label) $(attached_queues) tap queues attached before the guest came"
    dpdk_eal "$label" "0@$LAST_CPU,1@0"
    bg_start --log "$WORK/testpmd-$label.log" "$TESTPMD" "${EAL_ARGS[@]}" \
        --vdev "net_virtio_user0,queues=$queues,queue_size=256,mac=02:00:00:00:00:01,path=$SOCK$VDEV_EXTRA" \
        -- --nb-cores=1 --rxq="$queues" --txq="$queues" --rxd=256 --txd=256 \
        --total-num-mbufs=32768 --stats-period 1 --forward-mode="$mode" --txpkts=64
    TESTPMD_PID=$BG_PID
    wait_for 30 "($label) testpmd did not start" log_has "$WORK/testpmd-$label.log" "Port statistics"
    wait_for 10 "($label) vnetd did not run queue pair $((queues - 1))" \
        log_has "$WORK/vnetd-$label.log" "queue pair $((queues - 1)) running"
    ATTACHED=$(attached_queues)
}

stop_case() {
    local label=$1
    stop_pid "$TESTPMD_PID" INT
    grep -q "Bye" "$WORK/testpmd-$label.log" || fail "($label) testpmd did not exit cleanly"
    KERNEL_RX=$(($(link_stat "$NS" "$TAP" rx_packets) + $(link_stat "$NS" "$TAP" rx_dropped)))
    KERNEL_TX=$(link_stat "$NS" "$TAP" tx_packets)
    wait_for 10 "($label) testpmd did not hang up" log_has "$WORK/vnetd-$label.log" "connection closed"
    AFTER=$(attached_queues)
    stop_pid "$VNETD_PID" TERM || fail "($label) vnetd did not exit 0"
    expect_vnetd_log "$label" "$WORK/vnetd-$label.log"
}

# check_txonly LABEL QUEUES: the per-queue identities of a txonly run.
check_txonly() {
    local label=$1 queues=$2 q sum=0
    local stats="$WORK/vnetd-$label.json" log="$WORK/vnetd-$label.log"
    local pmd="$WORK/testpmd-$label.log"
    for ((q = 0; q < queues; q++)); do
        local sent vm_rx tap_tx drops untaken
        sent=$(testpmd_stream "$pmd" "$q" TX-packets)
        vm_rx=$(vnetd_queue "$stats" vm0 "$q" rx packets)
        drops=$(vnetd_queue "$stats" vm0 "$q" rx drops)
        tap_tx=$(vnetd_queue "$stats" "$TAP" "$q" tx packets)
        untaken=$(untaken_in_ring "$log" $((2 * q + 1)))
        [ -n "$sent" ] && [ "$sent" -gt 0 ] || fail "($label) testpmd sent nothing on queue $q"
        check_equal "$label q$q" "testpmd_queue_TX-packets=$sent" \
            "vnetd_vm0_rx+untaken=$((vm_rx + untaken))"
        check_equal "$label q$q" "vnetd_vm0_rx=$vm_rx" "vnetd_tap_tx=$tap_tx"
        check_zero "$label q$q" "vnetd_vm0_rx_drops=$drops" \
            "vnetd_tap_tx_drops=$(vnetd_queue "$stats" "$TAP" "$q" tx drops)"
        sum=$((sum + tap_tx))
    done
    check_equal "$label" "vnetd_tap_tx_all_queues=$sum" "kernel_tap_rx_packets+rx_dropped=$KERNEL_RX"
    check_equal "$label" "testpmd_TX-packets=$(testpmd_port "$pmd" TX-packets)" \
        "sum_of_queues+untaken=$((sum + $(untaken_in_ring "$log" '[0-9]+')))"
    check_equal "$label" "tap_queues_attached_while_running=$ATTACHED" "queue_pairs=$queues"
    check_equal "$label" "tap_queues_attached_after_the_guest_left=$AFTER" "one=1"
}

echo "== (a) queues=2, one worker: testpmd txonly into a multiqueue tap"
start_case a 2 txonly --cpu "$LAST_CPU"
sleep "$SECONDS_TX"
stop_case a
check_txonly a 2

echo "== (b) queues=4, two workers: testpmd txonly"
start_case b 4 txonly --cpu 0 --cpu "$LAST_CPU"
sleep "$SECONDS_TX"
# Placement: queue pairs 0 and 2 on worker 0, 1 and 3 on worker 1; both
# worker threads must have run (CPU ticks of each, from /proc).
for w in 0 1; do
    ticks=0
    for t in /proc/"$VNETD_PID"/task/*; do
        [ "$(cat "$t/comm")" = "vnet-worker$w" ] || continue
        ticks=$(awk '{ print $14 + $15 }' "$t/stat")
    done
    echo "(b) vnet-worker$w: $ticks CPU ticks"
    [ "$ticks" -gt 0 ] || fail "(b) worker $w never ran"
done
stop_case b
check_txonly b 4
# The default offer: 8 queue pairs, of which the front end enabled 4.
grep -q "cross-connect vm0 <-> $TAP (8 queue pair(s)" "$WORK/vnetd-b.log" ||
    fail "(b) vnetd did not offer its default 8 queue pairs"

echo "== (c) queues=2: testpmd macswap reflects $N_FRAMES frames from the netns"
start_case c 2 macswap --cpu "$LAST_CPU"
ip netns exec "$NS" timeout 120 python3 "$REFLECT_CHECK" --ifname "$TAP" --count "$N_FRAMES" \
    --size 64 --dst-mac 02:00:00:00:00:01 >"$WORK/reflect-c.out" 2>"$WORK/reflect-c.err"
REFLECT_RC=$?
cat "$WORK/reflect-c.out"
stop_case c
[ "$REFLECT_RC" = 0 ] || fail "(c) the reflect check failed: $(cat "$WORK/reflect-c.err")"
read -r _ SENT _ GOT _ <"$WORK/reflect-c.out"
STATS="$WORK/vnetd-c.json"
sum_queues() {  # PORT DIR
    local q total=0
    for q in 0 1; do
        total=$((total + $(vnetd_queue "$STATS" "$1" "$q" "$2" packets)))
    done
    echo "$total"
}
check_equal c "sent=$SENT" "kernel_tap_tx_packets=$KERNEL_TX" \
    "vnetd_tap_rx=$(sum_queues "$TAP" rx)" "vnetd_vm0_tx=$(sum_queues vm0 tx)" \
    "testpmd_RX-packets=$(testpmd_port "$WORK/testpmd-c.log" RX-packets)" \
    "testpmd_TX-packets=$(testpmd_port "$WORK/testpmd-c.log" TX-packets)" \
    "vnetd_vm0_rx=$(sum_queues vm0 rx)" "vnetd_tap_tx=$(sum_queues "$TAP" tx)" \
    "captured=$GOT"
check_equal c "tap_queues_attached_while_running=$ATTACHED" "queue_pairs=2"

pass
