// The factory entry for vxlan ports, a switch's uplink to other hosts
// (ports/vxlan/vxlan_uplink.hpp): the port is a TapPort on `vxtap<VNI>`;
// VxlanUplinkService owns the kernel vxlan device and the tc splice, tells
// `vnetctl show` about them, and changes the remote peers at run time.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "control/ports/port_factory.hpp"
#include "ports/vxlan/vxlan_uplink.hpp"

namespace vnet::control {

class VxlanUplinkService final : public PortService {
public:
    explicit VxlanUplinkService(std::unique_ptr<ports::VxlanUplink> uplink)
        : uplink_(std::move(uplink)) {}

    void start(ports::Port*) override {}
    void set_peer(ports::Port*) override {}
    size_t connections() override { return 0; }
    void show(nlohmann::json& out) override;

    // vnetctl switch uplink peer add/del. Throws std::invalid_argument
    // (a bad address, a peer there already or not there) or PortSetupError.
    void add_peer(const std::string& address) { uplink_->link().add_peer(address); }
    void remove_peer(const std::string& address) { uplink_->link().remove_peer(address); }
    const std::set<std::string>& peers() const { return uplink_->link().peers(); }

private:
    std::unique_ptr<ports::VxlanUplink> uplink_;
};

}  // namespace vnet::control
