// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// XDP_REDIRECT every frame to the device in redirect_map[0], which vnetd
// fills with the ifindex of the port's xdp_redirect interface. A devmap
// (not bpf_redirect(ifindex)) so the kernel batches the transmit and
// flushes once per tap write batch (reference/kernel-datapath.md row 6).
// An empty entry passes the frame to the stack instead of dropping it: the
// lower bits of bpf_redirect_map's flags are the action on a failed lookup.
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} redirect_map SEC(".maps");

SEC("xdp")
int xdp_redirect(struct xdp_md* ctx) {
    (void)ctx;
    return bpf_redirect_map(&redirect_map, 0, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
