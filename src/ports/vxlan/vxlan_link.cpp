#include "ports/vxlan/vxlan_link.hpp"

#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <net/if.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/vxlan.h>
#include <netlink/route/neighbour.h>
#include <sys/socket.h>

#include <memory>
#include <stdexcept>
#include <string_view>

#include "common/netlink_handles.hpp"
#include "ports/setup_error.hpp"
#include "ports/vxlan/route_socket.hpp"

namespace vnet::ports {
namespace {

// The alias (ip link's "alias") vnetd gives the vxlan devices it makes.
constexpr const char* kOwnerMark = "vnetd vxlan uplink";

using netlink::Addr;
using netlink::Link;
using netlink::Neigh;
using netlink::Sock;

Addr parse_ip(const std::string& device, const std::string& what, const std::string& text) {
    nl_addr* a = nullptr;
    if (nl_addr_parse(text.c_str(), AF_UNSPEC, &a) < 0 ||
        (nl_addr_get_family(a) != AF_INET && nl_addr_get_family(a) != AF_INET6) ||
        nl_addr_get_prefixlen(a) != nl_addr_get_len(a) * 8) {
        if (a != nullptr) {
            nl_addr_put(a);
        }
        throw std::invalid_argument(device + ": " + what + " '" + text +
                                    "' is not an IPv4 or IPv6 address");
    }
    return Addr(a);
}

// "2001:db8::0001" and "2001:db8::1" are one peer: peers are kept as
// libnl prints them.
std::string canonical_ip(const std::string& device, const std::string& text) {
    Addr a = parse_ip(device, "peer", text);
    char buf[INET6_ADDRSTRLEN + 8];
    return nl_addr2str(a.get(), buf, sizeof buf);
}

// The all-zero FDB entry of one remote, for add and delete alike.
Neigh peer_entry(const std::string& device, unsigned ifindex, const std::string& address) {
    Addr dst = parse_ip(device, "peer", address);
    Addr zero_mac(nl_addr_build(AF_LLC, "\0\0\0\0\0\0", 6));
    Neigh n(rtnl_neigh_alloc());
    rtnl_neigh_set_ifindex(n.get(), static_cast<int>(ifindex));
    rtnl_neigh_set_dst(n.get(), dst.get());  // before the family: libnl checks it against dst
    rtnl_neigh_set_family(n.get(), AF_BRIDGE);
    rtnl_neigh_set_lladdr(n.get(), zero_mac.get());
    rtnl_neigh_set_state(n.get(), NUD_PERMANENT);
    rtnl_neigh_set_flags(n.get(), NTF_SELF);
    return n;
}

}  // namespace

VxlanLink::VxlanLink(const VxlanLinkOptions& options) : options_(options) {
    const std::string device = "vxlan '" + options_.name + "'";
    if (options_.vni == 0 || options_.vni > 0xffffff) {
        throw_option_error(
            device, "vni " + std::to_string(options_.vni) + " is out of range (1..16777215)");
    }
    Sock sk = route_socket(device);
    Link link(rtnl_link_vxlan_alloc());
    rtnl_link_set_name(link.get(), options_.name.c_str());
    rtnl_link_vxlan_set_id(link.get(), options_.vni);
    rtnl_link_vxlan_set_port(link.get(), options_.dstport);
    if (!options_.learning) {
        rtnl_link_vxlan_set_learning(link.get(), 0);
    }
    if (!options_.local.empty()) {
        Addr local = parse_ip(device, "local", options_.local);
        rtnl_link_vxlan_set_local(link.get(), local.get());
    }
    if (!options_.underlay.empty()) {
        const unsigned lower = ::if_nametoindex(options_.underlay.c_str());
        if (lower == 0) {
            throw_option_error(device, "underlay device '" + options_.underlay +
                                           "': no such network device in vnetd's namespace");
        }
        rtnl_link_vxlan_set_link(link.get(), lower);
    }
    if (options_.mtu != 0) {
        rtnl_link_set_mtu(link.get(), options_.mtu);
    }
    int added = rtnl_link_add(sk.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL);
    if (added == -NLE_EXIST && remove_leftover(sk.get())) {
        replaced_leftover_ = true;
        added = rtnl_link_add(sk.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL);
    }
    if (added < 0) {
        netlink_failed(device,
                       "creating the vxlan device (vni " + std::to_string(options_.vni) +
                           ", udp port " + std::to_string(options_.dstport) + ")",
                       added);
    }
    rtnl_link* made = nullptr;
    if (int err = rtnl_link_get_kernel(sk.get(), 0, options_.name.c_str(), &made); err < 0) {
        netlink_failed(device, "finding the device just made", err);
    }
    Link created(made);
    ifindex_ = static_cast<unsigned>(rtnl_link_get_ifindex(created.get()));
    mtu_ = rtnl_link_get_mtu(created.get());
    Link up(rtnl_link_alloc());
    rtnl_link_set_flags(up.get(), IFF_UP);
    rtnl_link_set_ifalias(up.get(), kOwnerMark);
    if (int err = rtnl_link_change(sk.get(), created.get(), up.get(), 0); err < 0) {
        (void)rtnl_link_delete(sk.get(), created.get());
        netlink_failed(device, "setting the device up", err);
    }
}

// A vnetd killed with its uplink leaves the device behind (the kernel
// deletes a tap with its last fd, a vxlan device never): one whose alias
// says it is vnetd's is ours to remove. Any other device of that name is
// someone else's, and the add fails with EEXIST naming it.
bool VxlanLink::remove_leftover(nl_sock* sk) {
    rtnl_link* raw = nullptr;
    if (rtnl_link_get_kernel(sk, 0, options_.name.c_str(), &raw) < 0) {
        return false;
    }
    Link old(raw);
    const char* alias = rtnl_link_get_ifalias(old.get());
    if (!rtnl_link_is_vxlan(old.get()) || alias == nullptr ||
        std::string_view(alias) != kOwnerMark) {
        return false;
    }
    return rtnl_link_delete(sk, old.get()) == 0;
}

VxlanLink::~VxlanLink() {
    try {
        Sock sk = route_socket(options_.name);
        Link link(rtnl_link_alloc());
        rtnl_link_set_ifindex(link.get(), static_cast<int>(ifindex_));
        (void)rtnl_link_delete(sk.get(), link.get());  // gone already (netns deleted): fine
    } catch (const PortSetupError&) {
    }
}

void VxlanLink::add_peer(const std::string& text) {
    const std::string device = "vxlan '" + options_.name + "'";
    const std::string address = canonical_ip(device, text);
    Neigh entry = peer_entry(device, ifindex_, address);
    if (peers_.count(address) != 0) {
        throw std::invalid_argument(device + ": peer " + address + " is there already");
    }
    Sock sk = route_socket(device);
    if (int err = rtnl_neigh_add(sk.get(), entry.get(), NLM_F_CREATE | NLM_F_APPEND); err < 0) {
        netlink_failed(device, "adding peer " + address, err);
    }
    peers_.insert(address);
}

void VxlanLink::remove_peer(const std::string& text) {
    const std::string device = "vxlan '" + options_.name + "'";
    const std::string address = canonical_ip(device, text);
    if (peers_.count(address) == 0) {
        throw std::invalid_argument(device + ": no peer " + address);
    }
    Neigh entry = peer_entry(device, ifindex_, address);
    Sock sk = route_socket(device);
    if (int err = rtnl_neigh_delete(sk.get(), entry.get(), 0); err < 0) {
        netlink_failed(device, "removing peer " + address, err);
    }
    peers_.erase(address);
    forget_macs_behind(sk.get(), address);
}

// The MACs the kernel learned behind a removed peer would still send known
// unicast there: a removed peer gets nothing at all, so they go too.
size_t VxlanLink::forget_macs_behind(nl_sock* sk, const std::string& address) {
    Addr peer = parse_ip(options_.name, "peer", address);
    nl_cache* cache = nullptr;
    if (rtnl_neigh_alloc_cache_flags(sk, &cache, NL_CACHE_AF_ITER) < 0) {
        return 0;  // they age out (the kernel's 300 s) instead
    }
    size_t forgotten = 0;
    for (nl_object* o = nl_cache_get_first(cache); o != nullptr; o = nl_cache_get_next(o)) {
        auto* n = reinterpret_cast<rtnl_neigh*>(o);
        nl_addr* dst = rtnl_neigh_get_dst(n);
        if (rtnl_neigh_get_family(n) == AF_BRIDGE &&
            rtnl_neigh_get_ifindex(n) == static_cast<int>(ifindex_) && dst != nullptr &&
            nl_addr_cmp(dst, peer.get()) == 0 && rtnl_neigh_delete(sk, n, 0) == 0) {
            ++forgotten;
        }
    }
    nl_cache_free(cache);
    return forgotten;
}

}  // namespace vnet::ports
