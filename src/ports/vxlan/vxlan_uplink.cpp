#include "ports/vxlan/vxlan_uplink.hpp"

namespace vnet::ports {

VxlanUplink::VxlanUplink(std::unique_ptr<VxlanLink> link, unsigned tap_ifindex,
                         std::unique_ptr<EvpnBridge> bridge)
    : bridge_(std::move(bridge)), link_(std::move(link)) {
    const std::string device = "vxlan uplink '" + link_->name() + "'";
    to_tunnel_ = std::make_unique<TcRedirect>(device, tap_ifindex, link_->ifindex());
    from_tunnel_ = std::make_unique<TcRedirect>(device, link_->ifindex(), tap_ifindex);
}

}  // namespace vnet::ports
