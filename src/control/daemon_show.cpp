// port.show (vnetctl show): what a port is and how its rings stand, VPP
// `show vhost-user` style. Runs on the control thread like every method;
// what belongs to a worker (ring cursors, guest ring fields) is read on that
// worker by the port's service (vhost_user_show.cpp), and the counters are
// relaxed atomics, read as the stats read them.
#include "control/daemon.hpp"
#include "control/metrics/stats_report.hpp"
#include "control/switches/port_membership_json.hpp"

namespace vnet::control {

nlohmann::json Daemon::show_ports(const std::optional<std::string>& only) {
    if (only && ports_.entry_named(*only) == nullptr) {
        throw rpc::RpcError(rpc::ErrorCode::refused, "no port named '" + *only + "'");
    }
    nlohmann::json out = nlohmann::json::array();
    for (const PortConfig& pc : config_.ports) {
        PortEntry* entry = ports_.entry_named(pc.name);
        if (entry == nullptr || (only && *only != pc.name)) {
            continue;
        }
        nlohmann::json j{{"name", pc.name},
                         {"type", to_string(pc.type)},
                         {"queue_pairs", entry->port->queue_count()}};
        if (const PortConfig* peer = config_.peer_of(pc.name)) {
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

}  // namespace vnet::control
