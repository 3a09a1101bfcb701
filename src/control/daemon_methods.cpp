// The control socket's methods: what vnetctl can ask of a running vnetd.
// Each runs on the control thread between other control-plane events, so it
// sees ports and counters exactly as the stats report does.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "control/daemon.hpp"
#include "control/stats_report.hpp"
#include "dataplane/switch/mac_address.hpp"

namespace vnet::control {
namespace {

// The socket's directory, created when missing (/run/vnetd on a fresh boot);
// an existing one is left as its owner made it.
void make_parent_directory(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) {
        return;
    }
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        throw std::system_error(errno, std::generic_category(), "mkdir " + dir);
    }
}

// `params` may name one switch ({"switch": "S"}); none: every switch.
std::optional<std::string> switch_param(const nlohmann::json& params) {
    if (params.is_object() && params.contains("switch")) {
        if (!params["switch"].is_string()) {
            throw rpc::RpcError(rpc::ErrorCode::invalid_params, "switch must be a string");
        }
        return params["switch"].get<std::string>();
    }
    return std::nullopt;
}

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

void Daemon::open_control_socket() {
    if (config_.control_socket.empty()) {
        return;
    }
    add_control_methods();
    rpc::ControlServerOptions o;
    o.path = config_.control_socket;
    o.mode = config_.control_socket_mode;
    o.group = config_.control_socket_group;
    try {
        make_parent_directory(o.path);
        control_server_ = std::make_unique<rpc::ControlServer>(reactor_, o, control_methods_);
    } catch (const std::system_error& e) {
        // Only the default may be taken by another vnetd on the host: this
        // one still forwards, it just cannot be driven. A path given on
        // purpose that cannot be used is an error like any other.
        if (config_.control_socket != kDefaultControlSocket || e.code().value() != EADDRINUSE) {
            throw;
        }
        log_->warn("{}; running without a control socket (give --control-socket PATH)", e.what());
    }
}

void Daemon::add_control_methods() {
    control_methods_.add("version", "vnetd's version", [](const nlohmann::json&) {
        return nlohmann::json{{"version", VNET_VERSION}};
    });
    control_methods_.add("stats",
                         "every port's counters by queue and direction, as the stats file has them",
                         [this](const nlohmann::json&) { return stats_json(); });
    control_methods_.add("port.list",
                         "the ports: name, type, where they are, queue pairs, peer, connections",
                         [this](const nlohmann::json&) {
                             nlohmann::json out = nlohmann::json::array();
                             for (const PortConfig& pc : config_.ports) {
                                 nlohmann::json p{{"name", pc.name},
                                                  {"type", to_string(pc.type)},
                                                  {"queue_pairs", config_.queue_pairs_of(pc)}};
                                 if (const PortConfig* peer = config_.peer_of(pc.name)) {
                                     p["peer"] = peer->name;
                                 }
                                 if (pc.type == PortType::vhost_user) {
                                     p["socket_path"] = pc.socket_path;
                                     p["client"] = pc.client;
                                 } else if (pc.type == PortType::tap) {
                                     p["ifname"] = pc.ifname;
                                 }
                                 for (auto& [name, service] : services_) {
                                     if (name == pc.name) {
                                         p["connections"] = service->connections();
                                     }
                                 }
                                 out.push_back(std::move(p));
                             }
                             return out;
                         });
    add_switch_methods();
}

// switch.list and mac.list: the MAC table belongs to the switch's worker, so
// it is read there (run_sync), between rounds; the datapath takes no lock.
void Daemon::add_switch_methods() {
    auto selected = [this](const nlohmann::json& params) {
        std::optional<std::string> only = switch_param(params);
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
    };
    control_methods_.add(
        "switch.list", "the switches: MAC table size and bounds, ports, counters, drops by reason",
        [this, selected](const nlohmann::json& params) {
            nlohmann::json out = nlohmann::json::array();
            for (SwitchEntry* s : selected(params)) {
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
        });
    control_methods_.add(
        "mac.list", "the learned MACs: switch, VLAN, MAC, port, seconds since last seen",
        [this, selected](const nlohmann::json& params) {
            nlohmann::json out = nlohmann::json::array();
            for (SwitchEntry* s : selected(params)) {
                s->worker->run_sync([&] {
                    const uint64_t now = dataplane::switching::steady_clock_ns();
                    const auto& sw = *s->datapath;
                    sw.core().mac_table().for_each([&](const auto& e) {
                        const ports::Port* p = sw.member_port(e.member);
                        out.push_back({{"switch", s->name},
                                       {"vlan", e.vlan},
                                       {"mac", dataplane::switching::to_string(e.mac)},
                                       {"port", p == nullptr ? "" : p->name()},
                                       {"age_s", (now - e.last_seen) / 1000000000ull}});
                    });
                });
            }
            return out;
        });
}

}  // namespace vnet::control
