#!/bin/bash
# Packed virtqueues (VIRTIO_F_RING_PACKED, virtio 1.2 §2.8) end to end
# against DPDK testpmd's virtio-user front end with packed_vq=1: a packed
# driver nobody here wrote. The cases and their exact counts are those of
# the split tests, run again on packed rings:
#
#   test_testpmd_virtio_user.sh, packed_vq=1 (in_order=1, DPDK's default),
#   then packed_vq=1,in_order=0 (descriptors may come back out of order on
#   the driver side; ids then differ from slots):
#     (a) txonly into vnetd -> tap: testpmd TX-packets == vnetd vm0 rx
#         (+ untaken at stop) == vnetd tap tx == kernel tap rx_packets +
#         rx_dropped
#     (b) the same with vnetd as client, testpmd server=1
#     (c) macswap of N frames injected from the netns: every side exact
#   test_testpmd_multiqueue.sh, packed_vq=1:
#     queues=2 and queues=4 txonly, per-queue counts exact; queues=2 macswap
#
# Every vnetd log of every case must say the rings were packed (the port
# logs it once per connection), so a front end silently falling back to
# split rings fails the test.
#
# Usage: test_testpmd_packed.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_SECONDS, VNET_TEST_FRAMES as in the scripts it runs.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap, DPDK EAL)"
command -v dpdk-testpmd >/dev/null || skip "dpdk-testpmd not found (Debian package dpdk)"

export VNET_TEST_EXPECT_LOG='packed rings \(VIRTIO_F_RING_PACKED negotiated\)'

# run_case NAME SCRIPT VDEV_ARGS: SCRIPT must pass with those virtio-user args.
run_case() {
    local name=$1 script=$2 args=$3 rc
    echo "==== $name: $script with $args"
    VNET_TEST_VDEV_ARGS=$args bash "$HERE/$script" "$BUILD_DIR"
    rc=$?
    [ "$rc" = 77 ] && skip "$name: $script skipped"
    [ "$rc" = 0 ] || fail "$name: $script failed with $args (exit $rc)"
    ok "$name"
}

run_case "single queue, in_order=1" test_testpmd_virtio_user.sh packed_vq=1
run_case "single queue, in_order=0" test_testpmd_virtio_user.sh packed_vq=1,in_order=0
run_case "multiqueue" test_testpmd_multiqueue.sh packed_vq=1

pass
