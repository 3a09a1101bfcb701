// The control socket's methods: what vnetctl can ask of a running vnetd.
// Each runs on the control thread between other control-plane events, so it
// sees ports and counters exactly as the stats report does.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/steady_clock.hpp"
#include "control/daemon.hpp"
#include "control/stats_report.hpp"
#include "control/vxlan_port_builder.hpp"
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

// A JSON param as the text the option table parses: what a flag would say.
std::string setting_text(const std::string& key, const nlohmann::json& value) {
    if (value.is_string()) {
        return value.get<std::string>();
    }
    if (value.is_boolean()) {
        return value.get<bool>() ? "on" : "off";
    }
    if (value.is_number_integer()) {
        return value.dump();
    }
    if (value.is_array()) {
        std::string out;
        for (const nlohmann::json& item : value) {
            if (!out.empty()) {
                out += ',';
            }
            out += setting_text(key, item);
        }
        return out;
    }
    throw rpc::RpcError(rpc::ErrorCode::invalid_params,
                        "'" + key + "' must be a string, an integer, true/false or a list");
}

// The params but `structural` ones as KEY = text, what the option rows take
// (port.add's [[port]] keys, switch.add's [[switch]] keys).
std::vector<std::pair<std::string, std::string>> settings_of(
    const nlohmann::json& params, std::initializer_list<std::string_view> structural) {
    std::vector<std::pair<std::string, std::string>> settings;
    for (const auto& [key, value] : params.items()) {
        if (std::find(structural.begin(), structural.end(), key) == structural.end()) {
            settings.emplace_back(key, setting_text(key, value));
        }
    }
    return settings;
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
    if (handed_over_control_) {
        o.handed_over_fd = handed_over_control_.release();  // the server owns it from here
    }
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

// A change vnetctl asked for (port.add/del, switch.add/del, uplink peers):
// the daemon's refusal becomes the error message; once it is made, the
// run-time state file is rewritten, so a restart keeps it.
template <typename Change>
nlohmann::json Daemon::apply_change(Change change) {
    try {
        change();
    } catch (const rpc::RpcError&) {
        throw;
    } catch (const std::exception& e) {
        throw rpc::RpcError(rpc::ErrorCode::refused, e.what());
    }
    save_run_state();
    return nlohmann::json{{"ok", true}};
}

void Daemon::add_control_methods() {
    control_methods_.add("version", "vnetd's version", [](const nlohmann::json&) {
        return nlohmann::json{{"version", VNET_VERSION}};
    });
    control_methods_.add("stats",
                         "every port's counters by queue and direction, as the stats file has them",
                         [this](const nlohmann::json&) { return stats_json(); });
    control_methods_.add(
        "port.list", "the ports: name, type, where they are, queue pairs, peer, connections",
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
                } else if (pc.type == PortType::vxlan) {
                    p["switch"] = pc.switch_name;
                    p["vni"] = pc.vni;
                    p["device"] = vxlan_device_name(pc);
                    p["ifname"] = vxlan_tap_name(pc);
                    p["remotes"] = pc.vxlan_remote;
                }
                if (PortEntry* entry = entry_named(pc.name); entry != nullptr && entry->service) {
                    p["connections"] = entry->service->connections();
                }
                out.push_back(std::move(p));
            }
            return out;
        });
    control_methods_.add(
        "port.add",
        "add a port: {name, type, peer?, KEY: VALUE...} with the [[port]] keys of the config "
        "file; peer cross-connects it to a port in no cross-connect",
        [this](const nlohmann::json& params) {
            if (!params.is_object()) {
                throw rpc::RpcError(rpc::ErrorCode::invalid_params, "params must be an object");
            }
            const std::string name = rpc::string_param(params, "name");
            const std::string type = rpc::string_param(params, "type");
            const std::string peer = rpc::optional_string_param(params, "peer").value_or("");
            const auto settings = settings_of(params, {"name", "type", "peer"});
            return apply_change([&] {
                Config scratch = config_;  // option rows may write daemon-wide state: not ours
                add_port(port_from_settings(name, type, settings, scratch), peer);
            });
        });
    control_methods_.add("reload",
                         "re-read the config file and apply what changed (as SIGHUP does)",
                         [this](const nlohmann::json&) {
                             try {
                                 return reload();
                             } catch (const std::exception& e) {
                                 throw rpc::RpcError(rpc::ErrorCode::refused, e.what());
                             }
                         });
    control_methods_.add("upgrade",
                         "upgrade in place: {binary?}; a new vnetd (default: ours as on disk now) "
                         "takes over every port, then this one exits 0",
                         [this](const nlohmann::json& params) {
                             std::string binary;
                             if (params.is_object()) {
                                 binary = rpc::optional_string_param(params, "binary").value_or("");
                             }
                             try {
                                 return upgrade(binary);
                             } catch (const std::exception& e) {
                                 throw rpc::RpcError(rpc::ErrorCode::refused, e.what());
                             }
                         });
    control_methods_.add(
        "port.del", "remove a port: {name}; a connected guest is disconnected first",
        [this](const nlohmann::json& params) {
            if (!params.is_object()) {
                throw rpc::RpcError(rpc::ErrorCode::invalid_params, "params must be an object");
            }
            const std::string name = rpc::string_param(params, "name");
            return apply_change([&] { remove_port(name); });
        });
    control_methods_.add("port.set",
                         "change a port's settings at run time: params name, "
                         "ingress_policing_rate (kbit/s, 0 = off), ingress_policing_burst (kbit)",
                         [this](const nlohmann::json& params) { return set_port(params); });
    control_methods_.add("port.show",
                         "vnetctl show: {name?}: each port's socket, negotiated features, "
                         "memory regions, rings (size, indexes, kicks, calls), counters and drops",
                         [this](const nlohmann::json& params) { return show_ports(params); });
    add_switch_methods();
}

nlohmann::json Daemon::set_port(const nlohmann::json& params) {
    if (!params.is_object()) {
        throw rpc::RpcError(rpc::ErrorCode::invalid_params, "params must be an object");
    }
    // The port is `name`, as in port.add and port.del; a key it does not
    // know (a typo, the old `port`) is refused rather than ignored.
    for (const auto& item : params.items()) {
        const std::string& key = item.key();
        if (key != "name" && key != "ingress_policing_rate" && key != "ingress_policing_burst") {
            throw rpc::RpcError(rpc::ErrorCode::invalid_params,
                                "unknown parameter '" + key +
                                    "' (port.set takes name, ingress_policing_rate, "
                                    "ingress_policing_burst)");
        }
    }
    const std::string name = rpc::string_param(params, "name");
    const std::optional<uint32_t> rate =
        rpc::optional_uint32_param(params, "ingress_policing_rate");
    const std::optional<uint32_t> burst =
        rpc::optional_uint32_param(params, "ingress_policing_burst");
    if (!rate && !burst) {
        throw rpc::RpcError(rpc::ErrorCode::invalid_params,
                            "nothing to set: give ingress_policing_rate and/or "
                            "ingress_policing_burst");
    }
    PortConfig* pc = nullptr;
    for (PortConfig& p : config_.ports) {
        if (p.name == name) {
            pc = &p;
        }
    }
    ports::Port* port = port_named(name);
    if (pc == nullptr || port == nullptr) {
        throw rpc::RpcError(rpc::ErrorCode::refused, "no port named '" + name + "'");
    }
    pc->ingress_policing_rate = rate.value_or(pc->ingress_policing_rate);
    pc->ingress_policing_burst = burst.value_or(pc->ingress_policing_burst);
    // The bucket is shared by the port's paths through atomics; setting it
    // as a command of the worker that runs queue pair 0 keeps the change
    // between that worker's rounds, never inside one of its bursts.
    PortEntry& entry = *entry_of(*port);
    dataplane::IngressPolicer& policer = *entry.policer;
    owner_of(name, 0).run_sync(
        [&] { policer.configure(pc->ingress_policing_rate, pc->ingress_policing_burst); });
    log_->info("port {}: ingress policing {} kbit/s, burst {} kbit (port.set)", name,
               pc->ingress_policing_rate, pc->ingress_policing_burst);
    save_run_state();
    return nlohmann::json{{"name", name},
                          {"ingress_policing_rate", pc->ingress_policing_rate},
                          {"ingress_policing_burst", pc->ingress_policing_burst}};
}

// switch.add and switch.del change the switch list on the control thread;
// switch.list and mac.list: the MAC table belongs to the switch's worker, so
// it is read there (run_sync), between rounds; the datapath takes no lock.
void Daemon::add_switch_methods() {
    control_methods_.add(
        "switch.add",
        "add a switch: {name, KEY: VALUE...} with the [[switch]] keys of the config file "
        "(mac_aging_s, mac_table_size, destination_hold_us)",
        [this](const nlohmann::json& params) {
            if (!params.is_object()) {
                throw rpc::RpcError(rpc::ErrorCode::invalid_params, "params must be an object");
            }
            const std::string name = rpc::string_param(params, "name");
            return apply_change(
                [&] { add_switch(switch_from_settings(name, settings_of(params, {"name"}))); });
        });
    control_methods_.add("switch.del", "remove a switch that has no ports: {name}",
                         [this](const nlohmann::json& params) {
                             if (!params.is_object()) {
                                 throw rpc::RpcError(rpc::ErrorCode::invalid_params,
                                                     "params must be an object");
                             }
                             const std::string name = rpc::string_param(params, "name");
                             return apply_change([&] { remove_switch(name); });
                         });
    // A switch's VXLAN uplink is a port (port.add type vxlan, port.del);
    // its peers change here, the kernel's FDB and our config together.
    for (const bool add : {true, false}) {
        control_methods_.add(
            add ? "uplink.peer.add" : "uplink.peer.del",
            add ? "add a remote VTEP to a switch's vxlan uplink: {switch, address}"
                : "remove a remote VTEP from a switch's vxlan uplink: {switch, address}",
            [this, add](const nlohmann::json& params) {
                if (!params.is_object()) {
                    throw rpc::RpcError(rpc::ErrorCode::invalid_params, "params must be an object");
                }
                const std::string sw = rpc::string_param(params, "switch");
                const std::string address = rpc::string_param(params, "address");
                return apply_change([&] { change_uplink_peer(sw, address, add); });
            });
    }
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
        [selected](const nlohmann::json& params) {
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
        [selected](const nlohmann::json& params) {
            nlohmann::json out = nlohmann::json::array();
            for (SwitchEntry* s : selected(params)) {
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
        });
}

void Daemon::change_uplink_peer(const std::string& switch_name, const std::string& address,
                                bool add) {
    PortConfig* pc = nullptr;
    for (PortConfig& p : config_.ports) {
        if (p.type == PortType::vxlan && p.switch_name == switch_name) {
            pc = &p;
        }
    }
    if (pc == nullptr) {
        throw std::invalid_argument(switch_named(switch_name) == nullptr
                                        ? "no switch named '" + switch_name + "'"
                                        : "switch '" + switch_name +
                                              "' has no vxlan uplink (vnetctl switch uplink add " +
                                              switch_name + " vxlan --vni N ...)");
    }
    auto& service = dynamic_cast<VxlanUplinkService&>(*entry_named(pc->name)->service);
    if (add) {
        service.add_peer(address);
    } else {
        service.remove_peer(address);
    }
    pc->vxlan_remote.assign(service.peers().begin(), service.peers().end());
    log_->info("port {}: vxlan peer {} {} (switch {}; {} peer(s))", pc->name, address,
               add ? "added" : "removed", switch_name, pc->vxlan_remote.size());
}

}  // namespace vnet::control
