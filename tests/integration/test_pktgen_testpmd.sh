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

BUILD_DIR=${1:?usage: $0 BUILD_DIR}
PKTGEN="$BUILD_DIR/apps/vnet-pktgen"
TESTPMD=$(command -v dpdk-testpmd || true)
N_TX=${VNET_TEST_PACKETS:-1000000}

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root (DPDK EAL)"
    exit 77
fi
if [ -z "$TESTPMD" ]; then
    echo "SKIP: dpdk-testpmd not found (Debian package dpdk)"
    exit 77
fi
if [ ! -x "$PKTGEN" ]; then
    echo "FAIL: $PKTGEN not built"
    exit 1
fi

WORK=$(mktemp -d /tmp/vnet-pktgen-testpmd.XXXXXX)
PREFIX="vnet-pktgen-test-$$"
PIDS=()
cleanup() {
    exec 3>&- 2>/dev/null
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
    done
    sleep 0.2
    for pid in "${PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    rm -rf "$WORK" "/var/run/dpdk/$PREFIX-a" "/var/run/dpdk/$PREFIX-b" "/var/run/dpdk/$PREFIX-c"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Cores: testpmd's main lcore idles (stats / command line) and shares CPU 0
# with vnet-pktgen; its forwarding lcore gets the last CPU to itself (two
# busy pollers on one CPU run ~1000x slower: reference/peer-baselines.md).
NCPU=$(nproc)
LAST_CPU=$((NCPU - 1))
PKTGEN_CPU=0
if [ "$NCPU" -ge 3 ]; then PKTGEN_CPU=1; fi
# No hugepages needed on the vhost side: guest memory is ours (a memfd).
EAL=(--lcores "0@0,1@$LAST_CPU" --no-pci --no-huge -m 512)
PMD=(--nb-cores=1 --rxq=1 --txq=1 --total-num-mbufs=32768)

fail() {
    echo "FAIL: $*"
    for f in "$WORK"/*.log; do
        [ -f "$f" ] || continue
        echo "----- $(basename "$f") (last 30 lines)"
        tail -n 30 "$f"
    done
    exit 1
}

# testpmd's stdout is a file here: line-buffer it so its progress can be
# watched while it runs.
TESTPMD=(stdbuf -oL "$TESTPMD")

# wait_for FILE REGEX SECONDS
wait_for() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# value_of FILE NAME: the number after the last "NAME:" in FILE.
value_of() {
    grep -oE "$2: *[0-9]+" "$1" | tail -n 1 | grep -oE '[0-9]+$'
}

# Port (NIC) statistics, not forward statistics: testpmd flushes its RX
# queues when forwarding starts and leaves those packets out of the
# forward statistics, while the port counted every one of them.
nic_rx_packets() {
    grep -oE "RX-packets: *[0-9]+ +RX-missed" "$1" | tail -n 1 | grep -oE '[0-9]+'
}
nic_tx_packets() {
    grep -oE "TX-packets: *[0-9]+ +TX-errors" "$1" | tail -n 1 | grep -oE '[0-9]+'
}

# stop_pid PID: SIGINT, then wait (up to 20 s) for it to exit.
stop_pid() {
    kill -INT "$1" 2>/dev/null
    local i
    for ((i = 0; i < 200; i++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    wait "$1" 2>/dev/null
}

run_pktgen() {
    taskset -c "$PKTGEN_CPU" timeout 300 "$PKTGEN" --connect-timeout 20 "$@"
}

# start_pktgen OUT LOG ARGS...: in the background; PKTGEN_PID is vnet-pktgen
# itself (taskset execs it), so signals reach it and not a wrapper.
start_pktgen() {
    local out=$1 log=$2
    shift 2
    taskset -c "$PKTGEN_CPU" "$PKTGEN" --connect-timeout 20 "$@" >"$out" 2>"$log" &
    PKTGEN_PID=$!
    PIDS+=("$PKTGEN_PID")
}

echo "== (a) vnet-pktgen --tx --count $N_TX -> testpmd rxonly"
SOCK_A="$WORK/a.sock"
"${TESTPMD[@]}" "${EAL[@]}" --file-prefix="$PREFIX-a" --vdev "net_vhost0,iface=$SOCK_A,queues=1" \
    -- "${PMD[@]}" --forward-mode=rxonly --stats-period 1 >"$WORK/testpmd-a.log" 2>&1 &
TESTPMD_A=$!
PIDS+=("$TESTPMD_A")
wait_for "$WORK/testpmd-a.log" "binding succeeded" 30 || fail "(a) testpmd did not create $SOCK_A"
run_pktgen --socket-path "$SOCK_A" --tx --count "$N_TX" --size 64 \
    >"$WORK/pktgen-a.out" 2>"$WORK/pktgen-a.log" || fail "(a) vnet-pktgen failed"
PKTGEN_TX=$(value_of "$WORK/pktgen-a.out" tx-packets)
# testpmd prints port stats every second; wait until they show it all.
wait_for "$WORK/testpmd-a.log" "RX-packets: +$PKTGEN_TX +RX-missed" 10
stop_pid "$TESTPMD_A"
TESTPMD_RX=$(nic_rx_packets "$WORK/testpmd-a.log")
echo "(a) vnet-pktgen tx-packets: $PKTGEN_TX  testpmd RX-packets: $TESTPMD_RX"
[ "$PKTGEN_TX" = "$N_TX" ] || fail "(a) vnet-pktgen sent $PKTGEN_TX of $N_TX"
[ "$TESTPMD_RX" = "$PKTGEN_TX" ] || fail "(a) testpmd received $TESTPMD_RX, vnet-pktgen sent $PKTGEN_TX"

echo "== (b) testpmd txonly -> vnet-pktgen --rx"
SOCK_B="$WORK/b.sock"
mkfifo "$WORK/testpmd-b.cmd"
"${TESTPMD[@]}" "${EAL[@]}" --file-prefix="$PREFIX-b" --vdev "net_vhost0,iface=$SOCK_B,queues=1" \
    -- "${PMD[@]}" -i --forward-mode=txonly --txpkts=64 \
    <"$WORK/testpmd-b.cmd" >"$WORK/testpmd-b.log" 2>&1 &
TESTPMD_B=$!
PIDS+=("$TESTPMD_B")
exec 3>"$WORK/testpmd-b.cmd"  # held open: EOF on stdin would quit testpmd
wait_for "$WORK/testpmd-b.log" "binding succeeded" 30 || fail "(b) testpmd did not create $SOCK_B"
start_pktgen "$WORK/pktgen-b.out" "$WORK/pktgen-b.log" --socket-path "$SOCK_B" --rx
PKTGEN_B=$PKTGEN_PID
wait_for "$WORK/pktgen-b.log" "link up" 30 || fail "(b) vnet-pktgen did not come up"
wait_for "$WORK/testpmd-b.log" "virtio is now ready" 10 || fail "(b) testpmd never saw the device ready"
echo "start" >&3
sleep 3
echo "stop" >&3
wait_for "$WORK/testpmd-b.log" "Accumulated forward statistics" 10 ||
    fail "(b) testpmd did not stop forwarding"
echo "show port stats all" >&3
wait_for "$WORK/testpmd-b.log" "NIC statistics for port 0" 10 || fail "(b) no port stats"
sleep 1  # let vnet-pktgen take what is still in its used ring
stop_pid "$PKTGEN_B"
echo "quit" >&3
exec 3>&-
wait_for "$WORK/testpmd-b.log" "TX-packets: +[0-9]+ +TX-errors" 10 || fail "(b) no TX-packets in port stats"
TESTPMD_TX=$(nic_tx_packets "$WORK/testpmd-b.log")
PKTGEN_RX=$(value_of "$WORK/pktgen-b.out" rx-packets)
PKTGEN_BAD=$(value_of "$WORK/pktgen-b.out" rx-bad)
stop_pid "$TESTPMD_B"
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
wait_for "$WORK/pktgen-c.log" "waiting for a back end" 10 || fail "(c) vnet-pktgen did not listen"
"${TESTPMD[@]}" "${EAL[@]}" --file-prefix="$PREFIX-c" \
    --vdev "net_vhost0,iface=$SOCK_C,queues=1,client=1" \
    -- "${PMD[@]}" --forward-mode=rxonly --stats-period 1 >"$WORK/testpmd-c.log" 2>&1 &
TESTPMD_C=$!
PIDS+=("$TESTPMD_C")
wait "$PKTGEN_C" || fail "(c) vnet-pktgen failed"
PKTGEN_TX_C=$(value_of "$WORK/pktgen-c.out" tx-packets)
wait_for "$WORK/testpmd-c.log" "RX-packets: +$PKTGEN_TX_C +RX-missed" 10
stop_pid "$TESTPMD_C"
TESTPMD_RX_C=$(nic_rx_packets "$WORK/testpmd-c.log")
echo "(c) vnet-pktgen tx-packets: $PKTGEN_TX_C  testpmd RX-packets: $TESTPMD_RX_C"
[ "$PKTGEN_TX_C" = "$N_C" ] || fail "(c) vnet-pktgen sent $PKTGEN_TX_C of $N_C"
[ "$TESTPMD_RX_C" = "$PKTGEN_TX_C" ] || fail "(c) testpmd received $TESTPMD_RX_C, vnet-pktgen sent $PKTGEN_TX_C"

echo "PASS"
