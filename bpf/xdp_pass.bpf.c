// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// XDP_PASS every frame: the frame goes on to the stack as without XDP, so
// this measures the cost of running a program at all (and, on a tap, that
// the native build_skb path is taken).
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md* ctx) {
    (void)ctx;
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
