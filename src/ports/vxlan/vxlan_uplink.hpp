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
//
// In EVPN mode the same splice carries every frame, and the vxlan device
// still picks the VTEP: its own FDB holds what FRR's zebra installs (`MAC
// dst VTEP` for each remote MAC, `00:00:00:00:00:00 dst VTEP` for each
// host of the VNI), and the splice hands frames to the device's transmit
// path, which looks them up, exactly as it looks up the static peers. The
// devices are also ports of a bridge (evpn_bridge.hpp) that carries no
// frame at all (tc ingress runs before a bridge port's rx handler): it is
// only the table through which zebra and vnetd tell each other the MACs.
#pragma once

#include <memory>

#include "ports/vxlan/evpn_bridge.hpp"
#include "ports/vxlan/tc_redirect.hpp"
#include "ports/vxlan/vxlan_link.hpp"

namespace vnet::ports {

class VxlanUplink {
public:
    // Splices the vxlan device `link` (made first: the tap takes its MTU)
    // to the tap with ifindex `tap_ifindex`. Throws PortSetupError; the
    // device is removed again then.
    // `bridge` (EVPN mode; null otherwise) holds both devices already.
    VxlanUplink(std::unique_ptr<VxlanLink> link, unsigned tap_ifindex,
                std::unique_ptr<EvpnBridge> bridge = nullptr);
    // The programs go first, then the device, then the bridge (the tap is
    // its port's).
    ~VxlanUplink() = default;

    VxlanLink& link() { return *link_; }
    const VxlanLink& link() const { return *link_; }
    const TcRedirect& to_tunnel() const { return *to_tunnel_; }
    const TcRedirect& from_tunnel() const { return *from_tunnel_; }
    // Null unless the uplink is in EVPN mode.
    const EvpnBridge* bridge() const { return bridge_.get(); }

private:
    std::unique_ptr<EvpnBridge> bridge_;
    std::unique_ptr<VxlanLink> link_;
    std::unique_ptr<TcRedirect> to_tunnel_;    // tap ingress -> vxlan
    std::unique_ptr<TcRedirect> from_tunnel_;  // vxlan ingress -> tap
};

}  // namespace vnet::ports
