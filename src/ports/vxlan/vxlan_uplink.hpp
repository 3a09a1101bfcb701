// VxlanUplink: what joins a vnetd switch to other hosts through the
// kernel's VXLAN. The switch sees an ordinary tap port (`vxtap<VNI>`, a
// TapPort the port factory opens); behind it, a kernel vxlan device
// (`vxlan<VNI>`, VxlanLink) and two tc programs (TcRedirect) splice the
// two devices together:
//
//   switch -> vnetd writes the tap -> tap ingress --tc--> vxlan egress -> encapsulated, underlay
//   underlay -> decapsulated -> vxlan ingress --tc--> tap egress -> vnetd reads the tap -> switch
//
// so a frame crosses user space once per host, the host's stack sees
// neither device's frames, and GSO frames stay whole through both hops
// (the tap takes vnet-header GSO writes; the vxlan device segments, or the
// underlay's hardware does, after encapsulation). Kernel learning on the
// vxlan device sends known unicast to one peer; floods go to every peer.
#pragma once

#include <memory>

#include "ports/vxlan/tc_redirect.hpp"
#include "ports/vxlan/vxlan_link.hpp"

namespace vnet::ports {

class VxlanUplink {
public:
    // Splices the vxlan device `link` (made first: the tap takes its MTU)
    // to the tap with ifindex `tap_ifindex`. Throws PortSetupError; the
    // device is removed again then.
    VxlanUplink(std::unique_ptr<VxlanLink> link, unsigned tap_ifindex);
    // The programs go first, then the device (the tap is its port's).
    ~VxlanUplink() = default;

    VxlanLink& link() { return *link_; }
    const VxlanLink& link() const { return *link_; }
    const TcRedirect& to_tunnel() const { return *to_tunnel_; }
    const TcRedirect& from_tunnel() const { return *from_tunnel_; }

private:
    std::unique_ptr<VxlanLink> link_;
    std::unique_ptr<TcRedirect> to_tunnel_;    // tap ingress -> vxlan
    std::unique_ptr<TcRedirect> from_tunnel_;  // vxlan ingress -> tap
};

}  // namespace vnet::ports
