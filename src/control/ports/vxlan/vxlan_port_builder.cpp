#include "control/ports/vxlan/vxlan_port_builder.hpp"

#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ports/tap/tap_port.hpp"

namespace vnet::control {

void VxlanUplinkService::show(nlohmann::json& out) {
    const ports::VxlanLink& link = uplink_->link();
    out["vxlan"] = {
        {"datapath", "splice"},
        {"device", link.name()},
        {"ifindex", link.ifindex()},
        {"vni", link.options().vni},
        {"local", link.options().local},
        {"dstport", link.options().dstport},
        {"underlay", link.options().underlay},
        {"mtu", link.mtu()},
        {"peers", link.peers()},
        {"evpn", uplink_->bridge() != nullptr},
        {"bridge", uplink_->bridge() == nullptr ? "" : uplink_->bridge()->name()},
        {"tc_program_ids",
         {uplink_->to_tunnel().program_id(), uplink_->from_tunnel().program_id()}},
    };
}

VxlanSocketService::VxlanSocketService(ports::VxlanSocketPort& port, RunOnOwner run_on_owner,
                                       std::string local, unsigned mtu,
                                       std::unique_ptr<ports::EvpnTable> evpn)
    : port_(port),
      run_on_owner_(std::move(run_on_owner)),
      local_(std::move(local)),
      mtu_(mtu),
      evpn_(std::move(evpn)),
      peers_(port.peers()) {}

void VxlanSocketService::show(nlohmann::json& out) {
    // In EVPN mode the peers are zebra's flood list, which the sync gives
    // the port on its worker: read there.
    std::vector<std::string> peers = peers_;
    if (evpn_) {
        run_on_owner_(0, [this, &peers] { peers = port_.peers(); });
    }
    out["vxlan"] = {
        {"datapath", "socket"},
        {"vni", port_.vni()},
        {"local", local_},
        {"dstport", port_.dstport()},
        {"mtu", mtu_},
        {"peers", peers},
        {"evpn", evpn_ != nullptr},
        {"source_ports", port_.source_ports()},
    };
    if (evpn_) {
        nlohmann::json& vx = out["vxlan"];
        vx["bridge"] = evpn_->bridge->name();
        vx["device"] = evpn_->link->name();
        vx["socket_port"] = port_.local_port();  // dstport's datagrams are steered to it
    }
}

void VxlanSocketService::add_peer(const std::string& address) {
    change_on_owner([this, &address] { port_.add_peer(address); });
}

void VxlanSocketService::remove_peer(const std::string& address) {
    change_on_owner([this, &address] { port_.remove_peer(address); });
}

void VxlanSocketService::change_on_owner(const std::function<void()>& change) {
    std::exception_ptr error;
    std::vector<std::string> peers;
    run_on_owner_(0, [&] {
        try {
            change();
            peers = port_.peers();
        } catch (...) {
            error = std::current_exception();
        }
    });
    if (error) {
        std::rethrow_exception(error);
    }
    peers_ = std::move(peers);
}

namespace {

// EVPN mode, either datapath: the bridge comes first, so that it exists
// for the devices to join and goes last.
std::unique_ptr<ports::EvpnBridge> make_evpn_bridge(const PortConfig& pc, const VxlanSettings& vx,
                                                    const PortContext& context) {
    auto bridge = std::make_unique<ports::EvpnBridge>(vxlan_bridge_name(vx));
    if (bridge->replaced_leftover()) {
        context.log->warn("port {}: {} was left by a vnetd that died: deleted and made again",
                          pc.name, bridge->name());
    }
    return bridge;
}

std::unique_ptr<ports::VxlanLink> make_vxlan_link(const PortConfig& pc, const VxlanSettings& vx,
                                                  const PortContext& context) {
    ports::VxlanLinkOptions lo;
    lo.name = vxlan_device_name(vx);
    lo.vni = vx.vni;
    lo.local = vx.vxlan_local;
    lo.underlay = vx.vxlan_dev;
    lo.dstport = vx.vxlan_port;
    lo.mtu = pc.mtu.value_or(kDefaultVxlanMtu);  // what Config::uplink_mtu_of offers the guests
    lo.learning = !vx.evpn;                      // zebra installs the remote MACs
    auto link = std::make_unique<ports::VxlanLink>(lo);
    if (link->replaced_leftover()) {
        context.log->warn("port {}: {} was left by a vnetd that died: deleted and made again",
                          pc.name, lo.name);
    }
    return link;
}

// The socket datapath in EVPN mode: the kernel devices zebra reads and
// writes, carrying no frame (ports/vxlan/evpn_table.hpp).
std::unique_ptr<ports::EvpnTable> make_evpn_table(const PortConfig& pc, const VxlanSettings& vx,
                                                  const PortContext& context) {
    auto table = std::make_unique<ports::EvpnTable>();
    table->bridge = make_evpn_bridge(pc, vx, context);
    table->link = make_vxlan_link(pc, vx, context);
    ports::TapOptions to;
    to.name = vxlan_tap_name(vx);
    to.mtu = table->link->mtu();
    table->tap = std::make_unique<ports::TapDevice>(to);
    table->bridge->add_port(table->link->ifindex(), table->link->name());
    table->bridge->add_port(table->tap->ifindex(), table->tap->name());
    return table;
}

// The config's default and range are the port's (the config header stays
// free of the datapath's).
static_assert(kDefaultVxlanSourcePorts == ports::kVxlanDefaultSourcePorts);
static_assert(kMaxVxlanSourcePorts == ports::kVxlanMaxSendLanes);

// The socket datapath: the port is vnetd's own UDP socket; no kernel
// device, tap or tc program unless in EVPN mode, where they are zebra's
// table and the socket takes their UDP port.
BuiltPort build_socket_datapath(const PortConfig& pc, const PortContext& context) {
    const VxlanSettings& vx = std::get<VxlanSettings>(pc.settings);
    std::unique_ptr<ports::EvpnTable> evpn;
    if (vx.evpn) {
        evpn = make_evpn_table(pc, vx, context);
    }
    ports::VxlanSocketPortOptions so;
    so.vni = vx.vni;
    so.local = vx.vxlan_local;
    so.dstport = vx.vxlan_port;
    so.peers = vx.vxlan_remote;
    so.steer_dstport = vx.evpn;  // the vxlan device holds the port
    so.source_ports = vx.source_ports();
    auto port = std::make_unique<ports::VxlanSocketPort>(pc.name, so);
    const unsigned mtu = pc.mtu.value_or(kDefaultVxlanMtu);  // what Config::uplink_mtu_of offers
    auto service = std::make_unique<VxlanSocketService>(*port, context.run_on_owner, vx.vxlan_local,
                                                        mtu, std::move(evpn));
    context.log->info(
        "port {}: vxlan uplink, socket datapath: vni {}, udp socket on {} port {}, {} source "
        "port(s), mtu {}, {}",
        pc.name, vx.vni, vx.vxlan_local.empty() ? "any address" : vx.vxlan_local,
        vx.evpn ? std::to_string(port->local_port()) + " (port " + std::to_string(vx.vxlan_port) +
                      " steered to it)"
                : std::to_string(port->local_port()),
        so.source_ports, mtu,
        vx.evpn ? "evpn: " + vxlan_device_name(vx) + " and " + vxlan_tap_name(vx) + " in bridge " +
                      vxlan_bridge_name(vx) + " as zebra's table, no learning"
                : std::to_string(service->peers().size()) + " peer(s)");
    return {std::move(port), std::move(service)};
}

// The splice datapath: a kernel vxlan device spliced by tc to a tap.
BuiltPort build_splice_datapath(const PortConfig& pc, const PortContext& context) {
    const VxlanSettings& vx = std::get<VxlanSettings>(pc.settings);
    std::unique_ptr<ports::EvpnBridge> bridge;
    if (vx.evpn) {
        bridge = make_evpn_bridge(pc, vx, context);
    }
    auto link = make_vxlan_link(pc, vx, context);
    for (const std::string& peer : vx.vxlan_remote) {
        link->add_peer(peer);
    }
    // The tap carries what the tunnel carries: the vxlan device's MTU.
    ports::TapPortOptions to;
    to.tap.name = vxlan_tap_name(vx);
    to.tap.mtu = link->mtu();
    to.submit_mode = context.config.datapath.submit;
    auto tap = std::make_unique<ports::TapPort>(pc.name, to);
    const unsigned mtu = link->mtu();
    if (bridge) {
        bridge->add_port(link->ifindex(), link->name());
        bridge->add_port(tap->device().ifindex(), tap->device().name());
    }
    auto uplink = std::make_unique<ports::VxlanUplink>(std::move(link), tap->device().ifindex(),
                                                       std::move(bridge));
    context.log->info(
        "port {}: vxlan uplink, splice datapath: vni {}, device {} (ifindex {}) spliced to tap {} "
        "(ifindex {}), udp port {}, local {}, mtu {}, {}",
        pc.name, vx.vni, uplink->link().name(), uplink->link().ifindex(), tap->device().name(),
        tap->device().ifindex(), vx.vxlan_port,
        vx.vxlan_local.empty() ? "the route's" : vx.vxlan_local, mtu,
        uplink->bridge() != nullptr
            ? "evpn: both in bridge " + uplink->bridge()->name() + ", no learning"
            : std::to_string(uplink->link().peers().size()) + " peer(s)");
    return {std::move(tap), std::make_unique<VxlanUplinkService>(std::move(uplink))};
}

}  // namespace

BuiltPort build_vxlan_port(const PortConfig& pc, const PortContext& context) {
    return std::get<VxlanSettings>(pc.settings).vxlan_datapath == VxlanDatapath::socket
               ? build_socket_datapath(pc, context)
               : build_splice_datapath(pc, context);
}

void vxlan_list_fields(const PortConfig& pc, nlohmann::json& out) {
    const VxlanSettings& vx = std::get<VxlanSettings>(pc.settings);
    out["switch"] = pc.switch_name;
    out["vni"] = vx.vni;
    out["datapath"] = to_string(vx.vxlan_datapath);
    if (vx.vxlan_datapath == VxlanDatapath::socket) {  // no device: a UDP socket
        out["dstport"] = vx.vxlan_port;
    } else {
        out["device"] = vxlan_device_name(vx);
        out["ifname"] = vxlan_tap_name(vx);
    }
    out["remotes"] = vx.vxlan_remote;
    out["evpn"] = vx.evpn;
    if (vx.evpn) {
        out["bridge"] = vxlan_bridge_name(vx);
    }
}

size_t vxlan_change_peer(PortService& service, PortConfig& pc, const std::string& address,
                         bool add) {
    if (std::get<VxlanSettings>(pc.settings).evpn) {
        throw std::invalid_argument("switch '" + pc.switch_name +
                                    "': its uplink is in EVPN mode: the remote VTEPs come from the "
                                    "control plane (FRR), not from uplink peer add/del");
    }
    auto& uplink = dynamic_cast<VxlanService&>(service);  // what build_vxlan_port made
    if (add) {
        uplink.add_peer(address);
    } else {
        uplink.remove_peer(address);
    }
    std::vector<std::string>& remotes = std::get<VxlanSettings>(pc.settings).vxlan_remote;
    remotes = uplink.peers();
    return remotes.size();
}

std::string vxlan_handover_key(const PortConfig& pc) {
    return vxlan_device_name(std::get<VxlanSettings>(pc.settings));
}

// The successor would have to make the same vxlan device while ours still
// exists: refused before anything starts, as a tap with XDP is.
std::vector<int> vxlan_handover_fds(ports::Port& port, PortService*) {
    throw std::invalid_argument("port '" + port.name() +
                                "': a vxlan uplink is not handed over; restart vnetd instead "
                                "(the switch's remote MACs are learned again)");
}

}  // namespace vnet::control
