// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// XDP_DROP every frame that enters the tap: the cheapest possible consumer,
// for measuring what vnetd can push into a tap (reference/peer-baselines.md:
// native XDP_DROP on a tap is the seed's +44.8% case). The kernel counts the
// drops in the tap's rx_dropped, not rx_packets.
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_drop(struct xdp_md* ctx) {
    (void)ctx;
    return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
