#!/bin/bash
# A real Linux guest with two queue pairs (QEMU TCG, -smp 2, vhost-user
# queues=2, virtio-net-pci mq=on) on vnetd, cross-connected to a
# multiqueue tap in a netns. The guest (qemu/guest_init.sh with vnet_mq=2):
#   - ethtool -l shows 2 combined channels, maximum and current;
#   - ethtool -L combined 1, then combined 2, at run time: QEMU turns each
#     into SET_VRING_ENABLE of queue pair 1's rings, and vnetd logs the pair
#     stopping ("disabled by the front end") and running again, in order;
#   - one iperf3 client per CPU, pinned, so XPS sends each stream through
#     its CPU's queue pair.
# Asserts: ping 3/3; both streams complete; vnetd's per-queue counters of both queue
# pairs are non-zero, and for each queue q vnetd's vm0 queue q rx equals the
# guest driver's tx_queue_q_packets (and vm0 queue q tx its
# rx_queue_q_packets); the totals equal the guest's eth0 counters; vnetd
# exits 0. vectors=0: QEMU 7.2 TCG + vhost-user + MSI-X segfaults
# (peer-baselines.md pitfall 7).
#
# Usage: test_qemu_multiqueue.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IPERF3=$(command -v iperf3 || true)
QEMU_TIMEOUT=${VNET_QEMU_TIMEOUT:-240}
IPERF_SECS=${VNET_QEMU_IPERF_SECS:-4}

# shellcheck source=lib/common.sh
source "$HERE/lib/common.sh"
build_programs "${1:-}"
work_dir vnet-qemu-mq

[ "$(id -u)" = 0 ] || fail "needs root (network namespaces, taps)"
QEMU=$(command -v qemu-system-x86_64 || true)
[ -n "$QEMU" ] || fail "qemu-system-x86_64 not found (scripts/install-deps.sh)"
[ -n "$IPERF3" ] || fail "iperf3 not found"
need_built "$VNETD"
guest_kernel

NS=$(ns_name vnet-qmq)
TAP=$(link_name vnqmq)
SOCK="$WORK/vhost-user.sock"
STATS="$WORK/stats.json"
CTL="$WORK/vnetd.ctl"
HOST_IP=10.78.$(($$ % 250)).1
GUEST_IP=10.78.$(($$ % 250)).2

guest_initramfs
netns_new "$NS"

start_vnetd "$WORK/vnetd.log" --socket-path "$SOCK" --tap "$TAP" --queue-pairs 2 \
    --cpu 0 --cpu 1 --stats-file "$STATS" --control-socket "$CTL"
wait_for 10 "vnetd did not listen" log_has "$WORK/vnetd.log" "listening on"
ip link set "$TAP" netns "$NS" || fail "could not move $TAP into $NS"
ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "ip addr add"
ip -n "$NS" link set "$TAP" up || fail "ip link set $TAP up"
ip -n "$NS" link set lo up
for port in 5201 5202; do
    bg_start --log "$WORK/iperf3-$port.log" ip netns exec "$NS" "$IPERF3" -s -B "$HOST_IP" \
        -p "$port" -f m
done
sleep 0.5

echo "== booting a 2-CPU guest with 2 queue pairs (timeout ${QEMU_TIMEOUT}s)"
guest_command --smp 2 --console "$WORK/console.out" --socket "$SOCK" --queues 2 --mac 52:54:00:12:34:57 \
    --append "vnet_host=$HOST_IP vnet_guest=$GUEST_IP vnet_secs=$IPERF_SECS vnet_mq=2"
timeout -k 5 "$QEMU_TIMEOUT" "${GUEST_CMD[@]}" </dev/null >"$WORK/qemu.log" 2>&1
QEMU_RC=$?
tr -d '\r' <"$WORK/console.out" >"$WORK/console.txt"
[ "$QEMU_RC" = 124 ] && fail "QEMU still running after ${QEMU_TIMEOUT}s"
[ "$QEMU_RC" = 0 ] || fail "QEMU exited with $QEMU_RC"
grep -q '^VNET-GUEST done' "$WORK/console.txt" || fail "the guest did not finish its script"
stop_pid "$VNETD_PID" TERM || fail "vnetd did not exit 0 on SIGTERM"

guest() { sed -n "s/^VNET-GUEST $1//p" "$WORK/console.txt"; }

PING=$(guest 'ping: ' | grep 'packets transmitted')
echo "ping: $PING"
[[ "$PING" == "3 packets transmitted, 3 packets received"* ]] || fail "the guest's ping: $PING"

echo "== the guest's channels"
guest 'channels: '
# ethtool -l prints "Pre-set maximums" then "Current hardware settings".
COMBINED=$(guest 'channels: ' | grep -E '^Combined:' | awk '{ print $2 }' | tr '\n' ' ')
check_equal "ethtool -l" "max_and_current_combined=$COMBINED" "two_and_two=2 2 "
check_equal "ethtool -L 1" "rc=$(guest 'ethtool-L1-rc ')" "zero=0"
check_equal "ethtool -L 1" "current=$(guest 'channels-after-L1: ' | awk '{ print $2 }')" "one=1"
check_equal "ethtool -L 2" "rc=$(guest 'ethtool-LN-rc ')" "zero=0"
check_equal "ethtool -L 2" "current=$(guest 'channels-after-LN: ' | awk '{ print $2 }')" "two=2"

# vnetd followed: pair 1 stopped by the front end, then ran again.
grep -nE "queue pair 1 (running|stopped)" "$WORK/vnetd.log" | sed 's/^/  vnetd: /'
SEQUENCE=$(grep -oE "queue pair 1 (running|stopped \(ring [0-9]+ disabled by the front end\))" \
    "$WORK/vnetd.log" | sed 's/ (ring [0-9]* / (/' | tr '\n' ';')
case "$SEQUENCE" in
*"running;"*"stopped (disabled by the front end);"*"running;"*) ;;
*) fail "vnetd's queue pair 1 did not stop and restart with ethtool -L: $SEQUENCE" ;;
esac

echo "== the streams"
for cpu in 0 1; do
    guest "iperf-cpu$cpu: " | grep -E 'sender|receiver'
    guest "iperf-cpu$cpu: " | grep -qE 'receiver$' || fail "iperf3 on CPU $cpu did not complete"
done

echo "== per-queue counters (guest driver vs vnetd)"
guest 'queue-stats: '
qstat() { guest 'queue-stats: ' | awk -v k="$1:" '$1 == k { print $2 }'; }
# vnetd_queue PORT QUEUE DIR: packets of one queue from the stats JSON.
vnetd_queue() { vnetd_stats "$STATS" "$1.$3.packets.$2"; }
TOTAL_RX=0
TOTAL_TX=0
for q in 0 1; do
    from_guest=$(vnetd_queue vm0 "$q" rx)
    to_guest=$(vnetd_queue vm0 "$q" tx)
    [ "$from_guest" -gt 0 ] || fail "queue pair $q carried nothing from the guest"
    check_equal "queue $q" "guest_tx_queue_${q}_packets=$(qstat "tx_queue_${q}_packets")" \
        "vnetd_vm0_queue_${q}_rx=$from_guest"
    check_equal "queue $q" "guest_rx_queue_${q}_packets=$(qstat "rx_queue_${q}_packets")" \
        "vnetd_vm0_queue_${q}_tx=$to_guest"
    TOTAL_RX=$((TOTAL_RX + from_guest))
    TOTAL_TX=$((TOTAL_TX + to_guest))
done
check_equal totals "guest_eth0_tx_packets=$(guest 'eth0 tx_packets ')" "vnetd_vm0_rx=$TOTAL_RX"
check_equal totals "guest_eth0_rx_packets=$(guest 'eth0 rx_packets ')" "vnetd_vm0_tx=$TOTAL_TX"
pass
