// VxlanLink: the kernel `vxlan` device of a VXLAN uplink, made and removed
// over rtnetlink (libnl-route), and its remote peers. Peers are the
// all-zero FDB entries of `bridge fdb append 00:00:00:00:00:00 dev D dst
// IP`: the kernel sends broadcast, multicast and unknown unicast to each of
// them (head-end replication) and learns which remote VTEP each inner
// source MAC sits behind, so known unicast goes to one peer only.
#pragma once

#include <cstdint>
#include <set>
#include <string>

struct nl_sock;

namespace vnet::ports {

struct VxlanLinkOptions {
    std::string name;         // the device's name (IFNAMSIZ)
    uint32_t vni = 0;         // 1..16777215
    std::string local;        // the source address of the tunnel (empty: the route's)
    std::string underlay;     // the device the tunnel goes out of (empty: the route's)
    uint16_t dstport = 4789;  // IANA's VXLAN port (the kernel's own default is 8472)
    unsigned mtu = 0;         // 0: the kernel's choice
    // Off (`nolearning`) in EVPN mode: the control plane installs the
    // remote MACs, the data plane learns none.
    bool learning = true;
};

class VxlanLink {
public:
    // Creates the device, up. Throws PortSetupError naming the step
    // (EEXIST: a device of that name or a vxlan with that VNI and port exists).
    explicit VxlanLink(const VxlanLinkOptions& options);
    // Deletes the device (its FDB goes with it).
    ~VxlanLink();
    VxlanLink(const VxlanLink&) = delete;
    VxlanLink& operator=(const VxlanLink&) = delete;

    const std::string& name() const { return options_.name; }
    unsigned ifindex() const { return ifindex_; }
    unsigned mtu() const { return mtu_; }
    const VxlanLinkOptions& options() const { return options_; }
    // A device of that name left by a vnetd that died (marked by its alias
    // as vnetd's) was deleted first: for the log.
    bool replaced_leftover() const { return replaced_leftover_; }

    // A remote VTEP (IPv4 or IPv6 address). Adding one that is there, or
    // removing one that is not, throws std::invalid_argument; a refused
    // netlink call throws PortSetupError. Removing one also forgets the
    // MACs the kernel learned behind it: nothing goes there any more.
    void add_peer(const std::string& address);
    void remove_peer(const std::string& address);
    const std::set<std::string>& peers() const { return peers_; }

private:
    size_t forget_macs_behind(nl_sock* sk, const std::string& address);
    bool remove_leftover(nl_sock* sk);

    VxlanLinkOptions options_;
    unsigned ifindex_ = 0;
    unsigned mtu_ = 0;
    std::set<std::string> peers_;
    bool replaced_leftover_ = false;
};

}  // namespace vnet::ports
