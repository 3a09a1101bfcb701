// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// A socket lookup program (BPF_PROG_TYPE_SK_LOOKUP, attached to a network
// namespace) that delivers every UDP datagram for one port (and, when the
// rule names one, one local address) to the socket in steer_socket[0],
// whatever socket is bound there. An EVPN uplink needs it: the kernel's
// vxlan device must exist for FRR's zebra, which programs its forwarding
// table, and it binds the VXLAN port; vnetd receives the tunnel itself on
// a socket of its own (coalesced by UDP_GRO) and the device carries none.
// With no socket in the map, or a datagram the rule does not match, the
// kernel's own lookup decides, as if the program were not there.
#include <linux/bpf.h>
#include <linux/in.h>

#include <bpf/bpf_helpers.h>

// The address families of struct bpf_sk_lookup (linux/socket.h).
#define STEER_AF_INET 2
#define STEER_AF_INET6 10

struct steer_rule {
    __u32 port;     // host byte order, as bpf_sk_lookup.local_port
    __u32 family;   // 0: any local address; else STEER_AF_INET or STEER_AF_INET6
    __u32 addr[4];  // network byte order: addr[0] for IPv4, all four for IPv6
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct steer_rule);
} steer_rule SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_SOCKMAP);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} steer_socket SEC(".maps");

// The context's fields are read once, at fixed offsets, before any branch:
// the verifier refuses a context pointer the compiler has offset (as it
// does when it merges the IPv4 and IPv6 comparisons).
static int local_address_matches(struct bpf_sk_lookup* ctx, const struct steer_rule* rule) {
    const __u32 family = ctx->family;
    const __u32 ip4 = ctx->local_ip4;
    const __u32 ip6_0 = ctx->local_ip6[0];
    const __u32 ip6_1 = ctx->local_ip6[1];
    const __u32 ip6_2 = ctx->local_ip6[2];
    const __u32 ip6_3 = ctx->local_ip6[3];
    if (rule->family == 0) {
        return 1;
    }
    if (family != rule->family) {
        return 0;
    }
    if (family == STEER_AF_INET) {
        return ip4 == rule->addr[0];
    }
    return ip6_0 == rule->addr[0] && ip6_1 == rule->addr[1] && ip6_2 == rule->addr[2] &&
           ip6_3 == rule->addr[3];
}

SEC("sk_lookup")
int udp_port_steer(struct bpf_sk_lookup* ctx) {
    __u32 key = 0;
    if (ctx->protocol != IPPROTO_UDP) {
        return SK_PASS;
    }
    const struct steer_rule* rule = bpf_map_lookup_elem(&steer_rule, &key);
    if (rule == 0 || rule->port == 0 || ctx->local_port != rule->port ||
        !local_address_matches(ctx, rule)) {
        return SK_PASS;
    }
    struct bpf_sock* sk = bpf_map_lookup_elem(&steer_socket, &key);
    if (sk == 0) {
        return SK_PASS;
    }
    // A socket of the other address family is refused (-EAFNOSUPPORT):
    // then the kernel's own lookup decides.
    (void)bpf_sk_assign(ctx, sk, 0);
    bpf_sk_release(sk);
    return SK_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
