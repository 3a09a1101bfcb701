#!/bin/bash
# test_qemu_guest.sh with packed=on on the guest's virtio-net-pci device: a
# Linux guest's own packed-ring driver pings and runs iperf3 both ways over
# vnetd, RING_PACKED negotiated on both sides (VNET_QEMU_PACKED=1 there).
#
# Usage: test_qemu_packed.sh BUILD_DIR   (as root; exit 77 = skipped)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
VNET_QEMU_PACKED=1 exec bash "$HERE/test_qemu_guest.sh" "$@"
