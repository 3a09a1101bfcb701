// The factory entry for vxlan ports, a switch's uplink to other hosts, in
// one of two datapaths (VxlanSettings::vxlan_datapath):
//  * splice (ports/vxlan/vxlan_uplink.hpp): the port is a TapPort on
//    `vxtap<VNI>`; VxlanUplinkService owns the kernel vxlan device and the
//    tc splice, tells `vnetctl show` about them, and changes the remote
//    peers at run time;
//  * socket (ports/vxlan/vxlan_socket_port.hpp): the port is a
//    VxlanSocketPort, vnetd's own UDP socket; VxlanSocketService tells
//    `vnetctl show` about it and changes its peers on the worker that runs
//    it. In EVPN mode it also owns the kernel devices zebra's table lives
//    in (ports/vxlan/evpn_table.hpp).
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "control/ports/port_factory.hpp"
#include "ports/vxlan/evpn_table.hpp"
#include "ports/vxlan/vxlan_socket_port.hpp"
#include "ports/vxlan/vxlan_uplink.hpp"

namespace vnet::control {

// What the uplink commands need of either datapath's service.
class VxlanService : public PortService {
public:
    void start(ports::Port*) override {}
    void set_peer(ports::Port*) override {}
    size_t connections() override { return 0; }

    // vnetctl switch uplink peer add/del. Throws std::invalid_argument
    // (a bad address, a peer there already or not there) or PortSetupError.
    virtual void add_peer(const std::string& address) = 0;
    virtual void remove_peer(const std::string& address) = 0;
    virtual std::vector<std::string> peers() const = 0;
};

class VxlanUplinkService final : public VxlanService {
public:
    explicit VxlanUplinkService(std::unique_ptr<ports::VxlanUplink> uplink)
        : uplink_(std::move(uplink)) {}

    void show(nlohmann::json& out) override;
    void add_peer(const std::string& address) override { uplink_->link().add_peer(address); }
    void remove_peer(const std::string& address) override { uplink_->link().remove_peer(address); }
    std::vector<std::string> peers() const override {
        const std::set<std::string>& p = uplink_->link().peers();
        return {p.begin(), p.end()};
    }

private:
    std::unique_ptr<ports::VxlanUplink> uplink_;
};

class VxlanSocketService final : public VxlanService {
public:
    using RunOnOwner = std::function<void(uint16_t queue, const std::function<void()>& work)>;

    // `port` is the entry's port, which outlives the service; `mtu` is the
    // tunnel's, what the switch's VMs are offered; `evpn`, null unless in
    // EVPN mode, the devices zebra reads and writes.
    VxlanSocketService(ports::VxlanSocketPort& port, RunOnOwner run_on_owner, std::string local,
                       unsigned mtu, std::unique_ptr<ports::EvpnTable> evpn);

    void show(nlohmann::json& out) override;
    void add_peer(const std::string& address) override;
    void remove_peer(const std::string& address) override;
    // The control thread's copy, taken on the worker after each change: the
    // port's own table is the worker's.
    std::vector<std::string> peers() const override { return peers_; }

private:
    // Runs `change` on the worker that owns the port and rethrows there
    // what it threw (a worker's command must not throw).
    void change_on_owner(const std::function<void()>& change);

    ports::VxlanSocketPort& port_;
    RunOnOwner run_on_owner_;
    std::string local_;
    unsigned mtu_;
    std::unique_ptr<ports::EvpnTable> evpn_;
    std::vector<std::string> peers_;
};

}  // namespace vnet::control
