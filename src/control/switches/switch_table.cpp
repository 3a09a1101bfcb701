#include "control/switches/switch_table.hpp"

#include <algorithm>
#include <stdexcept>

#include "control/switches/evpn/evpn_fdb_sync.hpp"
#include "ports/vxlan/vxlan_socket_port.hpp"

namespace vnet::control {

namespace {

dataplane::switching::MemberConfig member_config_of(const PortConfig& pc) {
    dataplane::switching::MemberConfig m;
    if (pc.trunk.empty()) {
        m.vlans.untagged = pc.vlan.value_or(dataplane::switching::kDefaultVlan);
    } else {
        m.vlans.untagged = pc.vlan;  // the native VLAN, if any
        for (uint16_t v : pc.trunk) {
            m.vlans.tagged.set(v);
        }
    }
    m.allowed_macs = pc.allowed_macs;
    return m;
}

}  // namespace

SwitchTable::SwitchTable(Wiring wiring) : w_(std::move(wiring)) {}

SwitchTable::~SwitchTable() = default;

void SwitchTable::clear() {
    evpn_syncs_.clear();
    switches_.clear();
}

void SwitchTable::open_config_switches() {
    boot_connections_ = w_.config.connections.size();
    for (const SwitchConfig& sc : w_.config.switches) {
        open_switch(sc);
    }
}

// The s-th switch made runs on worker (boot connections + s) mod n
// (dataplane::Placement): at start-up s is the config's order, and a
// switch added later takes the next s, so switches spread over the workers
// as they come, and a deletion moves no other switch.
void SwitchTable::open_switch(const SwitchConfig& sc) {
    dataplane::switching::SwitchDatapathOptions o;
    o.core.mac_aging_s = sc.mac_aging_s;
    o.core.mac_table_size = sc.mac_table_size;
    o.queue_pair = w_.config.datapath;
    o.hold_ns = uint64_t{sc.destination_hold_us} * 1000;
    const SwitchId id = next_switch_id_;
    const size_t w = w_.placement.worker_for_switch(boot_connections_, id);
    dataplane::Worker& worker = *w_.workers[w];
    dataplane::switching::SwitchDatapath* datapath = nullptr;
    worker.run_sync([&] {
        datapath =
            &worker.add_engine(std::make_unique<dataplane::switching::SwitchDatapath>(sc.name, o));
    });
    ++next_switch_id_;
    switches_.push_back(SwitchEntry{id, sc.name, &worker, datapath});
    w_.log->info("switch {}: on worker {}, mac_table_size {}, mac_aging_s {}", sc.name, w,
                 sc.mac_table_size, sc.mac_aging_s);
}

SwitchEntry* SwitchTable::switch_named(const std::string& name) {
    for (SwitchEntry& s : switches_) {
        if (s.name == name) {
            return &s;
        }
    }
    return nullptr;
}

SwitchEntry* SwitchTable::switch_with_id(SwitchId id) {
    for (SwitchEntry& s : switches_) {
        if (s.id == id) {
            return &s;
        }
    }
    return nullptr;
}

void SwitchTable::add_switch(const SwitchConfig& sc) {
    if (switch_named(sc.name) != nullptr) {
        throw std::invalid_argument("a switch named '" + sc.name + "' exists already");
    }
    Config next = w_.config;
    next.switches.push_back(sc);
    next.validate();
    open_switch(sc);
    w_.config = std::move(next);
    w_.changed();
}

std::string SwitchTable::removal_refusal(const std::string& name,
                                         const std::vector<std::string>& leaving) const {
    std::string on_it;
    for (const PortConfig& p : w_.config.ports) {
        if (p.switch_name == name &&
            std::find(leaving.begin(), leaving.end(), p.name) == leaving.end()) {
            on_it += (on_it.empty() ? "" : ", ") + p.name;
        }
    }
    if (on_it.empty()) {
        return {};
    }
    return "switch '" + name + "' still has ports: " + on_it +
           " (remove them first: vnetctl port del NAME)";
}

void SwitchTable::remove_switch(const std::string& name) {
    SwitchEntry* s = switch_named(name);
    if (s == nullptr) {
        throw std::invalid_argument("no switch named '" + name + "'");
    }
    if (std::string refusal = removal_refusal(name); !refusal.empty()) {
        throw std::invalid_argument(refusal);
    }
    // No member is left, so no queue pair is served by it: the worker drops
    // it between rounds (its MAC table and aging sweep are part of it), and
    // nothing refers to its id any more.
    dataplane::Worker& worker = *s->worker;
    const dataplane::switching::SwitchDatapath* datapath = s->datapath;
    worker.run_sync([&] { worker.remove_engine(datapath); });
    switches_.erase(switches_.begin() + (s - switches_.data()));
    std::erase_if(w_.config.switches, [&name](const SwitchConfig& c) { return c.name == name; });
    w_.log->info("switch {}: removed", name);
    w_.changed();
}

dataplane::Worker& SwitchTable::worker_of_switch(SwitchId id) {
    return *switch_with_id(id)->worker;
}

SwitchId SwitchTable::attach_to_switch(const PortConfig& config, ports::Port& port) {
    SwitchEntry* s = switch_named(config.switch_name);
    if (s == nullptr) {
        throw std::invalid_argument("port '" + config.name + "': no switch named '" +
                                    config.switch_name + "'");
    }
    uint16_t member = 0;
    std::exception_ptr error;
    s->worker->run_sync([&] {
        try {
            member = s->datapath->attach(port, member_config_of(config));
        } catch (...) {
            error = std::current_exception();
        }
    });
    if (error) {
        std::rethrow_exception(error);
    }
    if (const VxlanSettings* vx = config.get<VxlanSettings>(); vx != nullptr && vx->evpn) {
        start_evpn_sync(*s, config, *vx, port, member);
    }
    // The switch makes every frame fit its receiver (a guest without TSO gets
    // segments, one without GUEST_CSUM a computed checksum), so a tap on it
    // takes GSO frames from the host whole, as it does from a tap peer.
    if (!port.has_front_end()) {
        if (std::string applied = port.follow_peer_features(every_guest_offload());
            !applied.empty()) {
            w_.log->info("port {}: {} (switch {} takes GSO frames)", port.name(), applied, s->name);
        }
    }
    w_.log->info("switch {}: port {} is member {} ({})", s->name, port.name(), member,
                 config.trunk.empty()
                     ? "access vlan " +
                           std::to_string(config.vlan.value_or(dataplane::switching::kDefaultVlan))
                     : "trunk");
    return s->id;
}

// The EVPN uplink's sync runs while the uplink is on the switch. If it
// cannot start (a device gone), the uplink leaves again: no half uplink.
void SwitchTable::start_evpn_sync(SwitchEntry& s, const PortConfig& config,
                                  const VxlanSettings& vxlan, ports::Port& port, uint16_t member) {
    try {
        evpn_syncs_.emplace(
            &port, std::make_unique<evpn::EvpnFdbSync>(
                       w_.reactor, w_.log, *s.worker, *s.datapath,
                       evpn::EvpnUplink{
                           .port = config.name,
                           .bridge = vxlan_bridge_name(vxlan),
                           .tap = vxlan_tap_name(vxlan),
                           .vxlan = vxlan_device_name(vxlan),
                           .member = member,
                           .vlan = config.vlan.value_or(dataplane::switching::kDefaultVlan),
                           .socket = dynamic_cast<ports::VxlanSocketPort*>(&port),
                       }));
    } catch (...) {
        s.worker->run_sync([&] { s.datapath->detach(port); });
        throw;
    }
}

bool SwitchTable::detach_from_switch(const ports::Port& port) {
    evpn_syncs_.erase(&port);
    for (SwitchEntry& s : switches_) {
        bool detached = false;
        s.worker->run_sync([&] { detached = s.datapath->detach(port); });
        if (detached) {
            w_.log->info("switch {}: port {} left", s.name, port.name());
            return true;
        }
    }
    return false;
}

}  // namespace vnet::control
