#include "control/rpc/audited_control.hpp"

#include "control/lifecycle/reload_summary.hpp"
#include "control/rpc/caller.hpp"

namespace vnet::control {
namespace {

// ", KEY VALUE" for each of `keys` among `settings`, in the order of `keys`.
std::string settings_text(const Settings& settings, std::initializer_list<const char*> keys) {
    std::string out;
    for (const char* key : keys) {
        for (const auto& [k, text] : settings) {
            if (k == key) {
                out += ", " + std::string(key) + " " + text;
            }
        }
    }
    return out;
}

std::string every_setting(const Settings& settings) {
    std::string out;
    for (const auto& [key, text] : settings) {
        out += (out.empty() ? " (" : ", ") + key + " " + text;
    }
    return out.empty() ? out : out + ")";
}

// The answer's `key` as text ("-" if it has none).
std::string field(const nlohmann::json& answer, const char* key) {
    if (!answer.is_object() || !answer.contains(key)) {
        return "-";
    }
    const nlohmann::json& v = answer[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

AuditedControl::AuditedControl(ControlApi inner, Logger log)
    : inner_(inner), log_(std::move(log)) {}

void AuditedControl::audit(const std::string& what) const {
    const std::optional<rpc::Caller> caller = rpc::current_caller();
    log_->info("control: {} {}", caller ? "uid " + std::to_string(caller->uid) : "uid ?", what);
}

nlohmann::json AuditedControl::stats() {
    return inner_.daemon.stats();
}

nlohmann::json AuditedControl::list_ports() {
    return inner_.ports.list_ports();
}

nlohmann::json AuditedControl::show_ports(const std::optional<std::string>& only) {
    return inner_.ports.show_ports(only);
}

void AuditedControl::add_port(const std::string& name, const std::string& type,
                              const std::string& peer, const Settings& settings) {
    inner_.ports.add_port(name, type, peer, settings);
    audit("added port " + name + " (" + type + (peer.empty() ? "" : ", peer " + peer) +
          settings_text(settings, {"switch", "vlan", "trunk", "allowed_macs", "socket_path", "tap",
                                   "queue_pairs"}) +
          ")");
}

void AuditedControl::remove_port(const std::string& name) {
    inner_.ports.remove_port(name);
    audit("removed port " + name);
}

nlohmann::json AuditedControl::set_port_policing(const std::string& name,
                                                 std::optional<uint32_t> rate,
                                                 std::optional<uint32_t> burst) {
    nlohmann::json r = inner_.ports.set_port_policing(name, rate, burst);
    audit("set port " + name + "'s ingress policing to " + field(r, "ingress_policing_rate") +
          " kbit/s, burst " + field(r, "ingress_policing_burst") + " kbit");
    return r;
}

nlohmann::json AuditedControl::reload() {
    nlohmann::json r = inner_.daemon.reload();
    audit("reloaded the config: " + reload_summary(r));
    return r;
}

nlohmann::json AuditedControl::upgrade(const std::string& binary) {
    // Logged before: once it succeeds, this vnetd is on its way out.
    audit("asked for an upgrade in place to " + (binary.empty() ? "our own binary" : binary));
    return inner_.daemon.upgrade(binary);
}

void AuditedControl::add_switch(const std::string& name, const Settings& settings) {
    inner_.switches.add_switch(name, settings);
    audit("added switch " + name + every_setting(settings));
}

void AuditedControl::remove_switch(const std::string& name) {
    inner_.switches.remove_switch(name);
    audit("removed switch " + name);
}

void AuditedControl::change_uplink_peer(const std::string& switch_name, const std::string& address,
                                        bool add) {
    inner_.switches.change_uplink_peer(switch_name, address, add);
    audit(add ? "added vxlan peer " + address + " to switch " + switch_name
              : "removed vxlan peer " + address + " from switch " + switch_name);
}

nlohmann::json AuditedControl::list_switches(const std::optional<std::string>& only) {
    return inner_.switches.list_switches(only);
}

nlohmann::json AuditedControl::list_macs(const std::optional<std::string>& only) {
    return inner_.switches.list_macs(only);
}

nlohmann::json AuditedControl::flush_macs(const std::optional<std::string>& switch_name,
                                          const std::optional<std::string>& port) {
    nlohmann::json r = inner_.daemon.flush_macs(switch_name, port);
    std::string where = port          ? "port " + *port
                        : switch_name ? "switch " + *switch_name
                                      : "every switch";
    audit("flushed " + field(r, "flushed") + " learned MAC(s) of " + where);
    return r;
}

nlohmann::json AuditedControl::log_level(const std::optional<std::string>& level) {
    if (!level) {
        return inner_.daemon.log_level(level);
    }
    // Said before the change, under the level it replaces (which took
    // info lines until now): a level of warn would hide the line after it.
    const nlohmann::json before = inner_.daemon.log_level(std::nullopt);
    audit("set the log level to " + *level + " (was " + field(before, "level") + ")");
    return inner_.daemon.log_level(level);
}

nlohmann::json AuditedControl::list_workers() {
    return inner_.daemon.list_workers();
}

}  // namespace vnet::control
