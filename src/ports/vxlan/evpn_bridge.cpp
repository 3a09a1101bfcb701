#include "ports/vxlan/evpn_bridge.hpp"

#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/ipv6.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/inet6.h>
#include <sys/socket.h>

#include <memory>
#include <string_view>

#include "common/netlink_handles.hpp"
#include "ports/setup_error.hpp"
#include "ports/vxlan/route_socket.hpp"

namespace vnet::ports {
namespace {

// The alias (ip link's "alias") vnetd gives the bridges it makes.
constexpr const char* kOwnerMark = "vnetd evpn bridge";

struct MsgFree {
    void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using Msg = std::unique_ptr<nl_msg, MsgFree>;

// `bridge link set dev D learning off flood off mcast_flood off
// bcast_flood off`: RTM_SETLINK of family AF_BRIDGE with the port's
// IFLA_PROTINFO, the message iproute2 sends. No learning: the bridge's FDB
// is written by vnetd and zebra only. No flooding: the bridge device's own
// frames (an IGMP report as it comes up) would otherwise go out of the tap
// to vnetd's switch and out of the vxlan device to every VTEP.
int port_passive(nl_sock* sk, unsigned ifindex) {
    Msg msg(nlmsg_alloc_simple(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK));
    if (!msg) {
        return -NLE_NOMEM;
    }
    ifinfomsg ifi{};
    ifi.ifi_family = AF_BRIDGE;
    ifi.ifi_index = static_cast<int>(ifindex);
    nlattr* protinfo = nullptr;
    if (nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO) < 0 ||
        (protinfo = nla_nest_start(msg.get(), IFLA_PROTINFO | NLA_F_NESTED)) == nullptr ||
        nla_put_u8(msg.get(), IFLA_BRPORT_LEARNING, 0) < 0 ||
        nla_put_u8(msg.get(), IFLA_BRPORT_UNICAST_FLOOD, 0) < 0 ||
        nla_put_u8(msg.get(), IFLA_BRPORT_MCAST_FLOOD, 0) < 0 ||
        nla_put_u8(msg.get(), IFLA_BRPORT_BCAST_FLOOD, 0) < 0) {
        return -NLE_NOMEM;
    }
    nla_nest_end(msg.get(), protinfo);
    if (int err = nl_send_auto(sk, msg.get()); err < 0) {
        return err;
    }
    return nl_wait_for_ack(sk);
}

// `ip link set B type bridge mcast_snooping 0`: a snooping bridge joins
// 224.0.0.106 (multicast router discovery) and reports it to its router
// ports whatever their flood flags; without snooping its multicast obeys
// them (off).
int snooping_off(nl_sock* sk, unsigned ifindex) {
    Msg msg(nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK));
    if (!msg) {
        return -NLE_NOMEM;
    }
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    ifi.ifi_index = static_cast<int>(ifindex);
    nlattr* info = nullptr;
    nlattr* data = nullptr;
    if (nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO) < 0 ||
        (info = nla_nest_start(msg.get(), IFLA_LINKINFO)) == nullptr ||
        nla_put_string(msg.get(), IFLA_INFO_KIND, "bridge") < 0 ||
        (data = nla_nest_start(msg.get(), IFLA_INFO_DATA)) == nullptr ||
        nla_put_u8(msg.get(), IFLA_BR_MCAST_SNOOPING, 0) < 0) {
        return -NLE_NOMEM;
    }
    nla_nest_end(msg.get(), data);
    nla_nest_end(msg.get(), info);
    if (int err = nl_send_auto(sk, msg.get()); err < 0) {
        return err;
    }
    return nl_wait_for_ack(sk);
}

}  // namespace

EvpnBridge::EvpnBridge(std::string name) : name_(std::move(name)) {
    const std::string device = "bridge '" + name_ + "'";
    netlink::Sock sk = route_socket(device);
    netlink::Link link(rtnl_link_alloc());
    if (int err = rtnl_link_set_type(link.get(), "bridge"); err < 0) {
        netlink_failed(device, "making a bridge link object", err);
    }
    rtnl_link_set_name(link.get(), name_.c_str());
    int added = rtnl_link_add(sk.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL);
    if (added == -NLE_EXIST && remove_leftover(sk.get())) {
        replaced_leftover_ = true;
        added = rtnl_link_add(sk.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL);
    }
    if (added < 0) {
        netlink_failed(device, "creating the bridge", added);
    }
    rtnl_link* made = nullptr;
    if (int err = rtnl_link_get_kernel(sk.get(), 0, name_.c_str(), &made); err < 0) {
        netlink_failed(device, "finding the bridge just made", err);
    }
    netlink::Link created(made);
    ifindex_ = static_cast<unsigned>(rtnl_link_get_ifindex(created.get()));
    // No link-local address and no multicast snooping before it goes up
    // (it would send MLD and IGMP reports): the kernel reads IFLA_AF_SPEC
    // after the flags in one request, so these are requests of their own.
    netlink::Link quiet(rtnl_link_alloc());
    rtnl_link_set_ifalias(quiet.get(), kOwnerMark);
    rtnl_link_inet6_set_addr_gen_mode(quiet.get(), IN6_ADDR_GEN_MODE_NONE);
    int err = rtnl_link_change(sk.get(), created.get(), quiet.get(), 0);
    if (err >= 0) {
        err = snooping_off(sk.get(), ifindex_);
    }
    if (err >= 0) {
        netlink::Link up(rtnl_link_alloc());
        rtnl_link_set_flags(up.get(), IFF_UP);
        err = rtnl_link_change(sk.get(), created.get(), up.get(), 0);
    }
    if (err < 0) {
        (void)rtnl_link_delete(sk.get(), created.get());
        netlink_failed(device, "setting the bridge up without IPv6 addresses or snooping", err);
    }
}

// As VxlanLink's: only a bridge whose alias says it is vnetd's.
bool EvpnBridge::remove_leftover(nl_sock* sk) {
    rtnl_link* raw = nullptr;
    if (rtnl_link_get_kernel(sk, 0, name_.c_str(), &raw) < 0) {
        return false;
    }
    netlink::Link old(raw);
    const char* alias = rtnl_link_get_ifalias(old.get());
    const char* type = rtnl_link_get_type(old.get());
    if (type == nullptr || std::string_view(type) != "bridge" || alias == nullptr ||
        std::string_view(alias) != kOwnerMark) {
        return false;
    }
    return rtnl_link_delete(sk, old.get()) == 0;
}

EvpnBridge::~EvpnBridge() {
    try {
        netlink::Sock sk = route_socket(name_);
        netlink::Link link(rtnl_link_alloc());
        rtnl_link_set_ifindex(link.get(), static_cast<int>(ifindex_));
        (void)rtnl_link_delete(sk.get(), link.get());  // gone already (netns deleted): fine
    } catch (const PortSetupError&) {
    }
}

void EvpnBridge::add_port(unsigned ifindex, const std::string& port_device) {
    const std::string device = "bridge '" + name_ + "'";
    netlink::Sock sk = route_socket(device);
    if (int err = rtnl_link_enslave_ifindex(sk.get(), static_cast<int>(ifindex_),
                                            static_cast<int>(ifindex));
        err < 0) {
        netlink_failed(device, "adding port " + port_device, err);
    }
    if (int err = port_passive(sk.get(), ifindex); err < 0) {
        netlink_failed(device, "turning learning and flooding off on port " + port_device, err);
    }
}

}  // namespace vnet::ports
