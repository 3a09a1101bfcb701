// The port table's control methods (PortControl): port.list, port.show
// (vnetctl show), port.add's parsing, port.set. Each runs on the control
// thread like every method; what belongs to a worker (ring cursors, guest
// ring fields, the policing bucket) is read or changed on that worker, and
// the counters are relaxed atomics, read as the stats read them.
#include "control/metrics/stats_report.hpp"
#include "control/ports/port_table.hpp"
#include "control/rpc/rpc_error.hpp"
#include "control/switches/port_membership_json.hpp"

namespace vnet::control {

nlohmann::json PortTable::list_ports() {
    const Config& config = w_.config;
    nlohmann::json out = nlohmann::json::array();
    for (const PortConfig& pc : config.ports) {
        nlohmann::json p{{"name", pc.name},
                         {"type", to_string(pc.type())},
                         {"queue_pairs", config.queue_pairs_of(pc)}};
        if (const PortConfig* peer = config.peer_of(pc.name)) {
            p["peer"] = peer->name;
        }
        if (const PortFactoryEntry* factory = find_port_factory(to_string(pc.type()));
            factory != nullptr && factory->list_fields != nullptr) {
            factory->list_fields(pc, p);
        }
        add_membership_fields(pc, p);
        if (PortEntry* entry = entry_named(pc.name); entry != nullptr && entry->service) {
            p["connections"] = entry->service->connections();
        }
        out.push_back(std::move(p));
    }
    return out;
}

// VPP `show vhost-user` style: what a port is and how its rings stand (the
// port's service reads its rings on their worker: vhost_user_show.cpp).
nlohmann::json PortTable::show_ports(const std::optional<std::string>& only) {
    if (only && entry_named(*only) == nullptr) {
        throw rpc::RpcError(rpc::ErrorCode::refused, "no port named '" + *only + "'");
    }
    nlohmann::json out = nlohmann::json::array();
    for (const PortConfig& pc : w_.config.ports) {
        PortEntry* entry = entry_named(pc.name);
        if (entry == nullptr || (only && *only != pc.name)) {
            continue;
        }
        nlohmann::json j{{"name", pc.name},
                         {"type", to_string(pc.type())},
                         {"queue_pairs", entry->port->queue_count()}};
        if (const PortConfig* peer = w_.config.peer_of(pc.name)) {
            j["peer"] = peer->name;
        }
        add_membership_fields(pc, j);
        if (entry->service) {
            entry->service->show(j);
        }
        j["stats"] = port_stats_json(*entry->port, entry->kind);
        out.push_back(std::move(j));
    }
    return out;
}

void PortTable::add_port(const std::string& name, const std::string& type, const std::string& peer,
                         const Settings& settings) {
    Config scratch = w_.config;  // option rows may write daemon-wide state: not ours
    add_port(port_from_settings(name, type, settings, scratch), peer);
}

nlohmann::json PortTable::set_port_policing(const std::string& name, std::optional<uint32_t> rate,
                                            std::optional<uint32_t> burst) {
    PortConfig* pc = nullptr;
    for (PortConfig& p : w_.config.ports) {
        if (p.name == name) {
            pc = &p;
        }
    }
    PortEntry* entry = entry_named(name);
    if (pc == nullptr || entry == nullptr) {
        throw rpc::RpcError(rpc::ErrorCode::refused, "no port named '" + name + "'");
    }
    pc->ingress_policing_rate = rate.value_or(pc->ingress_policing_rate);
    pc->ingress_policing_burst = burst.value_or(pc->ingress_policing_burst);
    // The bucket is shared by the port's paths through atomics; setting it
    // as a command of the worker that runs queue pair 0 keeps the change
    // between that worker's rounds, never inside one of its bursts.
    dataplane::IngressPolicer& policer = *entry->policer;
    owner_of(name, 0).run_sync(
        [&] { policer.configure(pc->ingress_policing_rate, pc->ingress_policing_burst); });
    w_.log->info("port {}: ingress policing {} kbit/s, burst {} kbit (port.set)", name,
                 pc->ingress_policing_rate, pc->ingress_policing_burst);
    w_.changed();
    return nlohmann::json{{"name", name},
                          {"ingress_policing_rate", pc->ingress_policing_rate},
                          {"ingress_policing_burst", pc->ingress_policing_burst}};
}

}  // namespace vnet::control
