// EvpnTable: an EVPN uplink's kernel devices when vnetd's own socket carries
// the tunnel (the socket datapath, VxlanSocketPort with steer_dstport). FRR's
// zebra knows a VNI only through them: the bridge `vxbr<VNI>` holding the
// vxlan device `vxlan<VNI>` (nolearning; its local address is the VTEP zebra
// advertises) and a port whose FDB entries are the local MACs. So they stay,
// as the table zebra and vnetd share, and carry no frame:
//  * the vxlan device receives nothing: the steering hands its UDP port's
//    datagrams to vnetd's socket; it sends nothing, as nothing enters it
//    (the bridge's ports neither learn nor flood);
//  * the tap `vxtap<VNI>` is that port: vnetd's static entries (the
//    switch's MACs) sit on it, as on the splice's tap. Its fd is held, never
//    read, so that the tap has carrier, as a port zebra takes MACs from must;
//  * vnetd reads zebra's entries back from the vxlan device (EvpnFdbSync)
//    and hands them to the socket port (set_forwarding).
// The members go in reverse order: the tap and the device leave the bridge
// before it is deleted.
#pragma once

#include <memory>

#include "ports/tap/tap_device.hpp"
#include "ports/vxlan/evpn_bridge.hpp"
#include "ports/vxlan/vxlan_link.hpp"

namespace vnet::ports {

struct EvpnTable {
    std::unique_ptr<EvpnBridge> bridge;
    std::unique_ptr<VxlanLink> link;
    std::unique_ptr<TapDevice> tap;
};

}  // namespace vnet::ports
