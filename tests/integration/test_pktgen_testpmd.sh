#!/bin/bash
# vnet-pktgen against DPDK testpmd's vhost-user back end (net_vhost): the
# packet counts on both sides must agree exactly.
#   (a) testpmd rxonly (server)       <- vnet-pktgen --tx --count N
#   (b) testpmd txonly (server, -i)   -> vnet-pktgen --rx; testpmd is stopped,
#       then vnet-pktgen drains; testpmd TX-packets == vnet-pktgen rx-packets
#   (c) testpmd rxonly (client=1)     <- vnet-pktgen --server --tx, with
#       EVENT_IDX and MRG_RXBUF off and random sizes
# testpmd's TX-packets counts only frames the vhost PMD put in our RX ring
# (the rest are TX-dropped), so a full drain must see exactly that many.
#
# Usage: test_pktgen_testpmd.sh BUILD_DIR   (as root; exit 77 = skipped)
set -u

TESTPMD=$(command -v dpdk-testpmd || true)
N_TX=${VNET_TEST_PACKETS:-1000000}

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (DPDK EAL)"
[ -n "$TESTPMD" ] || skip "dpdk-testpmd not found (Debian package dpdk)"
need_built "$PKTGEN"

work_dir vnet-pktgen-testpmd

# Cores: testpmd's main lcore idles (stats / command line) and shares CPU 0
# with vnet-pktgen; its forwarding lcore gets the last CPU to itself (two
# busy pollers on one CPU run ~1000x slower: reference/peer-baselines.md).
PKTGEN_CPU=0
if [ "$NCPU" -ge 3 ]; then PKTGEN_CPU=1; fi
# No hugepages needed on the vhost side: guest memory is ours (a memfd).
LCORES="0@0,1@$LAST_CPU"
PMD=(--nb-cores=1 --rxq=1 --txq=1 --total-num-mbufs=32768)

# testpmd's stdout is a file here: line-buffer it so its progress can be
# watched while it runs.
TESTPMD=(stdbuf -oL "$TESTPMD")

# Port (NIC) statistics, not forward statistics: testpmd flushes its RX
# queues when forwarding starts and leaves those packets out of the
# forward statistics, while the port counted every one of them.
nic_rx_packets() {
    grep -oE "RX-packets: *[0-9]+ +RX-missed" "$1" | tail -n 1 | grep -oE '[0-9]+'
}
nic_tx_packets() {
    grep -oE "TX-packets: *[0-9]+ +TX-errors" "$1" | tail -n 1 | grep -oE '[0-9]+'
}

run_pktgen() {
    taskset -c "$PKTGEN_CPU" timeout 300 "$PKTGEN" --connect-timeout 20 "$@"
}

# start_pktgen OUT LOG ARGS...: in the background; PKTGEN_PID is vnet-pktgen
# itself (taskset execs it), so signals reach it and not a wrapper.
start_pktgen() {
    local out=$1 log=$2
    shift 2
    bg_start --out "$out" --err "$log" taskset -c "$PKTGEN_CPU" "$PKTGEN" --connect-timeout 20 "$@"
    PKTGEN_PID=$BG_PID
}

echo "== (a) vnet-pktgen --tx --count $N_TX -> testpmd rxonly"
SOCK_A="$WORK/a.sock"
dpdk_eal a "$LCORES"
bg_start --log "$WORK/testpmd-a.log" "${TESTPMD[@]}" "${EAL_ARGS[@]}" \
    --vdev "net_vhost0,iface=$SOCK_A,queues=1" -- "${PMD[@]}" --forward-mode=rxonly --stats-period 1
TESTPMD_A=$BG_PID
wait_for 30 "(a) testpmd did not create $SOCK_A" log_has "$WORK/testpmd-a.log" "binding succeeded"
run_pktgen --socket-path "$SOCK_A" --tx --count "$N_TX" --size 64 \
    >"$WORK/pktgen-a.out" 2>"$WORK/pktgen-a.log" || fail "(a) vnet-pktgen failed"
PKTGEN_TX=$(pktgen_value "$WORK/pktgen-a.out" tx-packets)
# testpmd prints port stats every second; wait until they show it all.
wait_until 10 log_has "$WORK/testpmd-a.log" "RX-packets: +$PKTGEN_TX +RX-missed"
stop_pid "$TESTPMD_A" INT
TESTPMD_RX=$(nic_rx_packets "$WORK/testpmd-a.log")
echo "(a) vnet-pktgen tx-packets: $PKTGEN_TX  testpmd RX-packets: $TESTPMD_RX"
[ "$PKTGEN_TX" = "$N_TX" ] || fail "(a) vnet-pktgen sent $PKTGEN_TX of $N_TX"
[ "$TESTPMD_RX" = "$PKTGEN_TX" ] || fail "(a) testpmd received $TESTPMD_RX, vnet-pktgen sent $PKTGEN_TX"

echo "== (b) testpmd txonly -> vnet-pktgen --rx"
SOCK_B="$WORK/b.sock"
mkfifo "$WORK/testpmd-b.cmd"
dpdk_eal b "$LCORES"
bg_start --in "$WORK/testpmd-b.cmd" --log "$WORK/testpmd-b.log" "${TESTPMD[@]}" "${EAL_ARGS[@]}" \
    --vdev "net_vhost0,iface=$SOCK_B,queues=1" -- "${PMD[@]}" -i --forward-mode=txonly --txpkts=64
TESTPMD_B=$BG_PID
exec 3>"$WORK/testpmd-b.cmd"  # held open: EOF on stdin would quit testpmd
close_cmd_fd() { exec 3>&-; }
on_exit close_cmd_fd
wait_for 30 "(b) testpmd did not create $SOCK_B" log_has "$WORK/testpmd-b.log" "binding succeeded"
start_pktgen "$WORK/pktgen-b.out" "$WORK/pktgen-b.log" --socket-path "$SOCK_B" --rx
PKTGEN_B=$PKTGEN_PID
wait_for 30 "(b) vnet-pktgen did not come up" log_has "$WORK/pktgen-b.log" "link up"
wait_for 10 "(b) testpmd never saw the device ready" log_has "$WORK/testpmd-b.log" "virtio is now ready"
echo "start" >&3
sleep 3
echo "stop" >&3
wait_for 10 "(b) testpmd did not stop forwarding" \
    log_has "$WORK/testpmd-b.log" "Accumulated forward statistics"
echo "show port stats all" >&3
wait_for 10 "(b) no port stats" log_has "$WORK/testpmd-b.log" "NIC statistics for port 0"
sleep 1  # let vnet-pktgen take what is still in its used ring
stop_pid "$PKTGEN_B" INT
echo "quit" >&3
exec 3>&-
wait_for 10 "(b) no TX-packets in port stats" log_has "$WORK/testpmd-b.log" "TX-packets: +[0-9]+ +TX-errors"
TESTPMD_TX=$(nic_tx_packets "$WORK/testpmd-b.log")
PKTGEN_RX=$(pktgen_value "$WORK/pktgen-b.out" rx-packets)
PKTGEN_BAD=$(pktgen_value "$WORK/pktgen-b.out" rx-bad)
stop_pid "$TESTPMD_B" INT
echo "(b) testpmd TX-packets: $TESTPMD_TX  vnet-pktgen rx-packets: $PKTGEN_RX  rx-bad: $PKTGEN_BAD"
[ -n "$TESTPMD_TX" ] && [ "$TESTPMD_TX" -gt 0 ] || fail "(b) testpmd sent nothing"
[ "$PKTGEN_RX" = "$TESTPMD_TX" ] || fail "(b) vnet-pktgen received $PKTGEN_RX, testpmd sent $TESTPMD_TX"
[ "$PKTGEN_BAD" = 0 ] || fail "(b) vnet-pktgen counted $PKTGEN_BAD bad frames"

echo "== (c) vnet-pktgen --server --tx (event-idx off, mrg-rxbuf off, sizes 60-1500) -> testpmd client"
N_C=$((N_TX / 4))
SOCK_C="$WORK/c.sock"
start_pktgen "$WORK/pktgen-c.out" "$WORK/pktgen-c.log" --socket-path "$SOCK_C" --server --tx \
    --count "$N_C" --size-range 60-1500 --event-idx off --mrg-rxbuf off --duration 120
PKTGEN_C=$PKTGEN_PID
wait_for 10 "(c) vnet-pktgen did not listen" log_has "$WORK/pktgen-c.log" "waiting for a back end"
dpdk_eal c "$LCORES"
bg_start --log "$WORK/testpmd-c.log" "${TESTPMD[@]}" "${EAL_ARGS[@]}" \
    --vdev "net_vhost0,iface=$SOCK_C,queues=1,client=1" \
    -- "${PMD[@]}" --forward-mode=rxonly --stats-period 1
TESTPMD_C=$BG_PID
wait "$PKTGEN_C" || fail "(c) vnet-pktgen failed"
forget "$PKTGEN_C"
PKTGEN_TX_C=$(pktgen_value "$WORK/pktgen-c.out" tx-packets)
wait_until 10 log_has "$WORK/testpmd-c.log" "RX-packets: +$PKTGEN_TX_C +RX-missed"
stop_pid "$TESTPMD_C" INT
TESTPMD_RX_C=$(nic_rx_packets "$WORK/testpmd-c.log")
echo "(c) vnet-pktgen tx-packets: $PKTGEN_TX_C  testpmd RX-packets: $TESTPMD_RX_C"
[ "$PKTGEN_TX_C" = "$N_C" ] || fail "(c) vnet-pktgen sent $PKTGEN_TX_C of $N_C"
[ "$TESTPMD_RX_C" = "$PKTGEN_TX_C" ] || fail "(c) testpmd received $TESTPMD_RX_C, vnet-pktgen sent $PKTGEN_TX_C"

pass
