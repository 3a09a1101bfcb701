// EvpnBridge: the Linux bridge `vxbr<VNI>` of a VXLAN uplink in EVPN mode.
// FRR's zebra finds a VNI's broadcast domain through the vxlan device's
// master: it advertises the MACs in this bridge's FDB on its other ports
// (type-2 routes) and the VNI itself (type-3), and installs what it learns
// from the other hosts on the vxlan device. The bridge carries no frames:
// the tc splice (vxlan_uplink.hpp) takes every frame at the ingress hook of
// the tap and of the vxlan device, before a bridge port's rx handler runs,
// so the bridge is a table zebra and vnetd share, nothing more. Hence its
// ports learn nothing and flood nothing, and the bridge has no IPv6
// link-local address and no multicast snooping: the bridge device itself
// sends nothing (router solicitations, MLD and IGMP reports), and would
// reach neither port if it did.
#pragma once

#include <string>

struct nl_sock;

namespace vnet::ports {

class EvpnBridge {
public:
    // Makes the bridge, up. A bridge of that name left by a vnetd that
    // died (its alias says so) is deleted first; any other one is not
    // touched and the add fails (EEXIST). Throws PortSetupError.
    explicit EvpnBridge(std::string name);
    // Deletes the bridge (its ports are released, its FDB goes).
    ~EvpnBridge();
    EvpnBridge(const EvpnBridge&) = delete;
    EvpnBridge& operator=(const EvpnBridge&) = delete;

    // Makes the device with `ifindex` a port of the bridge, learning and
    // flooding off.
    // Throws PortSetupError naming the step.
    void add_port(unsigned ifindex, const std::string& device);

    const std::string& name() const { return name_; }
    unsigned ifindex() const { return ifindex_; }
    bool replaced_leftover() const { return replaced_leftover_; }

private:
    bool remove_leftover(nl_sock* sk);

    std::string name_;
    unsigned ifindex_ = 0;
    bool replaced_leftover_ = false;
};

}  // namespace vnet::ports
