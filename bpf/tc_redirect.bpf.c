// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// A tc (clsact ingress) program that hands every frame to the device in
// redirect_target[0], on that device's egress: what joins a VXLAN uplink's
// two halves (ports/vxlan/): frames vnetd writes into the uplink's tap are
// "received" by the tap and go out of the kernel vxlan device, encapsulated;
// frames the vxlan device decapsulates go out of the tap, to vnetd's read.
// Neither reaches the host's stack. With no target set the frame is
// dropped: an uplink half-built must not leak frames into the host.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} redirect_target SEC(".maps");

SEC("tc")
int tc_redirect(struct __sk_buff* skb) {
    (void)skb;
    __u32 key = 0;
    __u32* ifindex = bpf_map_lookup_elem(&redirect_target, &key);
    if (ifindex == 0 || *ifindex == 0) {
        return TC_ACT_SHOT;
    }
    return bpf_redirect(*ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
