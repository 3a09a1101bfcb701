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
#include "control/metrics/stats_report.hpp"
#include "control/rpc/audited_control.hpp"
#include "control/rpc/control_methods.hpp"
#include "control/switches/port_membership_json.hpp"
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

// The daemon's side of the control methods: each call does what it says
// on the control thread; a change, once made, rewrites the run-time state
// file so that a restart keeps it.
class DaemonControl final : public ControlApi {
public:
    explicit DaemonControl(Daemon& daemon) : d_(daemon) {}

    nlohmann::json stats() override { return d_.stats_json(); }

    nlohmann::json list_ports() override {
        nlohmann::json out = nlohmann::json::array();
        for (const PortConfig& pc : d_.config_.ports) {
            nlohmann::json p{{"name", pc.name},
                             {"type", to_string(pc.type)},
                             {"queue_pairs", d_.config_.queue_pairs_of(pc)}};
            if (const PortConfig* peer = d_.config_.peer_of(pc.name)) {
                p["peer"] = peer->name;
            }
            if (const PortFactoryEntry* factory = find_port_factory(to_string(pc.type));
                factory != nullptr && factory->list_fields != nullptr) {
                factory->list_fields(pc, p);
            }
            add_membership_fields(pc, p);
            if (PortEntry* entry = d_.ports_.entry_named(pc.name);
                entry != nullptr && entry->service) {
                p["connections"] = entry->service->connections();
            }
            out.push_back(std::move(p));
        }
        return out;
    }

    nlohmann::json show_ports(const std::optional<std::string>& only) override {
        return d_.show_ports(only);
    }

    void add_port(const std::string& name, const std::string& type, const std::string& peer,
                  const Settings& settings) override {
        Config scratch = d_.config_;  // option rows may write daemon-wide state: not ours
        d_.add_port(port_from_settings(name, type, settings, scratch), peer);
        d_.save_run_state();
    }

    void remove_port(const std::string& name) override {
        d_.remove_port(name);
        d_.save_run_state();
    }

    nlohmann::json set_port_policing(const std::string& name, std::optional<uint32_t> rate,
                                     std::optional<uint32_t> burst) override {
        return d_.set_port_policing(name, rate, burst);
    }

    nlohmann::json reload() override { return d_.reload(); }

    nlohmann::json upgrade(const std::string& binary) override { return d_.upgrade(binary); }

    void add_switch(const std::string& name, const Settings& settings) override {
        d_.add_switch(switch_from_settings(name, settings));
        d_.save_run_state();
    }

    void remove_switch(const std::string& name) override {
        d_.remove_switch(name);
        d_.save_run_state();
    }

    void change_uplink_peer(const std::string& switch_name, const std::string& address,
                            bool add) override {
        d_.change_uplink_peer(switch_name, address, add);
        d_.save_run_state();
    }

    // switch.list and mac.list: the MAC table belongs to the switch's
    // worker, so it is read there (run_sync), between rounds; the datapath
    // takes no lock.
    nlohmann::json list_switches(const std::optional<std::string>& only) override {
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

    nlohmann::json list_macs(const std::optional<std::string>& only) override {
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

    nlohmann::json flush_macs(const std::optional<std::string>& switch_name,
                              const std::optional<std::string>& port) override {
        return d_.flush_macs(switch_name, port);
    }

    nlohmann::json log_level(const std::optional<std::string>& level) override {
        return d_.change_log_level(level);
    }

    nlohmann::json list_workers() override { return d_.list_workers(); }

private:
    // The switch named `only`, or every switch.
    std::vector<SwitchEntry*> selected(const std::optional<std::string>& only) {
        std::vector<SwitchEntry*> out;
        for (SwitchEntry& s : d_.switches_) {
            if (!only || *only == s.name) {
                out.push_back(&s);
            }
        }
        if (only && out.empty()) {
            throw rpc::RpcError(rpc::ErrorCode::invalid_params, "no switch named '" + *only + "'");
        }
        return out;
    }

    Daemon& d_;
};

nlohmann::json Daemon::set_port_policing(const std::string& name, std::optional<uint32_t> rate,
                                         std::optional<uint32_t> burst) {
    PortConfig* pc = nullptr;
    for (PortConfig& p : config_.ports) {
        if (p.name == name) {
            pc = &p;
        }
    }
    ports::Port* port = ports_.port_named(name);
    if (pc == nullptr || port == nullptr) {
        throw rpc::RpcError(rpc::ErrorCode::refused, "no port named '" + name + "'");
    }
    pc->ingress_policing_rate = rate.value_or(pc->ingress_policing_rate);
    pc->ingress_policing_burst = burst.value_or(pc->ingress_policing_burst);
    // The bucket is shared by the port's paths through atomics; setting it
    // as a command of the worker that runs queue pair 0 keeps the change
    // between that worker's rounds, never inside one of its bursts.
    PortEntry& entry = *ports_.entry_of(*port);
    dataplane::IngressPolicer& policer = *entry.policer;
    ports_.owner_of(name, 0).run_sync(
        [&] { policer.configure(pc->ingress_policing_rate, pc->ingress_policing_burst); });
    log_->info("port {}: ingress policing {} kbit/s, burst {} kbit (port.set)", name,
               pc->ingress_policing_rate, pc->ingress_policing_burst);
    save_run_state();
    return nlohmann::json{{"name", name},
                          {"ingress_policing_rate", pc->ingress_policing_rate},
                          {"ingress_policing_burst", pc->ingress_policing_burst}};
}

void Daemon::open_control_socket() {
    if (config_.control_socket.empty()) {
        return;
    }
    control_api_ = std::make_unique<AuditedControl>(std::make_unique<DaemonControl>(*this), log_);
    add_control_methods(control_methods_, *control_api_);
    rpc::ControlServerOptions o;
    o.path = config_.control_socket;
    o.mode = config_.control_socket_mode;
    o.group = config_.control_socket_group;
    if (handed_over_control_) {
        o.handed_over_fd = handed_over_control_.release();  // the server owns it from here
    }
    try {
        control_server_ = std::make_unique<rpc::ControlServer>(reactor_, o, control_methods_);
    } catch (const std::system_error& e) {
        // Only the default may be taken by another vnetd on the host: this
        // one still forwards, it just cannot be driven. A path given on
        // purpose that cannot be used is an error like any other, and so is
        // any for a vnetd started empty (it would wait for nobody).
        if (config_.control_socket != kDefaultControlSocket || e.code().value() != EADDRINUSE ||
            config_.ports.empty()) {
            throw;
        }
        log_->warn("{}; running without a control socket (give --control-socket PATH)", e.what());
    }
}

void Daemon::change_uplink_peer(const std::string& switch_name, const std::string& address,
                                bool add) {
    PortConfig* pc = nullptr;
    const PortFactoryEntry* factory = nullptr;
    for (PortConfig& p : config_.ports) {
        const PortFactoryEntry* f = find_port_factory(to_string(p.type));
        if (f != nullptr && f->change_peer != nullptr && p.switch_name == switch_name) {
            pc = &p;
            factory = f;
        }
    }
    if (pc == nullptr) {
        throw std::invalid_argument(switches_.switch_named(switch_name) == nullptr
                                        ? "no switch named '" + switch_name + "'"
                                        : "switch '" + switch_name +
                                              "' has no vxlan uplink (vnetctl switch uplink add " +
                                              switch_name + " vxlan --vni N ...)");
    }
    const size_t peers =
        factory->change_peer(*ports_.entry_named(pc->name)->service, *pc, address, add);
    log_->info("port {}: vxlan peer {} {} (switch {}; {} peer(s))", pc->name, address,
               add ? "added" : "removed", switch_name, peers);
}

}  // namespace vnet::control
