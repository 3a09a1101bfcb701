// The switch table's control methods (SwitchControl): switch.add's parsing,
// uplink.peer.add/del, switch.list, mac.list. Each runs on the control
// thread; a switch's MAC table and counters belong to its worker and are
// read there (run_sync), between rounds.
#include "common/steady_clock.hpp"
#include "control/rpc/rpc_error.hpp"
#include "control/switches/switch_table.hpp"
#include "dataplane/switch/mac_address.hpp"

namespace vnet::control {
namespace {

nlohmann::json switch_counters_json(const dataplane::switching::SwitchCounters& counters) {
    const auto snapshot = counters.snapshot();
    nlohmann::json j;
    for (const auto& f : dataplane::switching::kSwitchCounterFields) {
        j[std::string(f.name)] = snapshot.*f.value;
    }
    nlohmann::json drops = nlohmann::json::object();
    for (size_t r = 0; r < packet::kDropReasonCount; ++r) {
        drops[std::string(packet::to_string(static_cast<packet::DropReason>(r)))] =
            snapshot.drops[r];
    }
    j["drops"] = drops;
    return j;
}

}  // namespace

void SwitchTable::add_switch(const std::string& name, const Settings& settings) {
    add_switch(switch_from_settings(name, settings));
}

void SwitchTable::change_uplink_peer(const std::string& switch_name, const std::string& address,
                                     bool add) {
    PortConfig* pc = nullptr;
    const PortFactoryEntry* factory = nullptr;
    for (PortConfig& p : w_.config.ports) {
        const PortFactoryEntry* f = find_port_factory(to_string(p.type()));
        if (f != nullptr && f->change_peer != nullptr && p.switch_name == switch_name) {
            pc = &p;
            factory = f;
        }
    }
    PortService* service = pc == nullptr ? nullptr : w_.service_of(pc->name);
    if (service == nullptr) {
        throw std::invalid_argument(switch_named(switch_name) == nullptr
                                        ? "no switch named '" + switch_name + "'"
                                        : "switch '" + switch_name +
                                              "' has no vxlan uplink (vnetctl switch uplink add " +
                                              switch_name + " vxlan --vni N ...)");
    }
    const size_t peers = factory->change_peer(*service, *pc, address, add);
    w_.log->info("port {}: vxlan peer {} {} (switch {}; {} peer(s))", pc->name, address,
                 add ? "added" : "removed", switch_name, peers);
    w_.changed();
}

std::vector<SwitchEntry*> SwitchTable::selected(const std::optional<std::string>& only) {
    std::vector<SwitchEntry*> out;
    for (SwitchEntry& s : switches_) {
        if (!only || *only == s.name) {
            out.push_back(&s);
        }
    }
    if (only && out.empty()) {
        throw rpc::RpcError(rpc::ErrorCode::invalid_params, "no switch named '" + *only + "'");
    }
    return out;
}

nlohmann::json SwitchTable::list_switches(const std::optional<std::string>& only) {
    nlohmann::json out = nlohmann::json::array();
    for (SwitchEntry* s : selected(only)) {
        nlohmann::json j{{"name", s->name}};
        nlohmann::json ports = nlohmann::json::array();
        s->worker->run_sync([&] {
            const auto& core = s->datapath->core();
            j["mac_entries"] = core.mac_table().size();
            j["mac_table_size"] = core.options().mac_table_size;
            j["mac_aging_s"] = core.options().mac_aging_s;
            for (uint16_t m = 0; m < dataplane::switching::kMaxSwitchMembers; ++m) {
                if (const ports::Port* p = s->datapath->member_port(m)) {
                    ports.push_back(p->name());
                }
            }
            j["counters"] = switch_counters_json(core.counters());
        });
        j["ports"] = std::move(ports);
        out.push_back(std::move(j));
    }
    return out;
}

nlohmann::json SwitchTable::list_macs(const std::optional<std::string>& only) {
    nlohmann::json out = nlohmann::json::array();
    for (SwitchEntry* s : selected(only)) {
        s->worker->run_sync([&] {
            const uint64_t now = steady_now_ns();
            const auto& sw = *s->datapath;
            sw.core().mac_table().for_each(now, [&](const auto& e) {
                const ports::Port* p = sw.member_port(e.member);
                out.push_back({{"switch", s->name},
                               {"vlan", e.vlan},
                               {"mac", dataplane::switching::to_string(e.mac)},
                               {"port", p == nullptr ? "" : p->name()},
                               {"age_s", e.age_ns / 1000000000ull}});
            });
        });
    }
    return out;
}

}  // namespace vnet::control
