// AuditedControl: the control socket's ControlApi as the daemon serves it.
// It passes every call to the part that answers it (the port table, the
// switch table, the daemon) and logs each change that
// was made, once, in words, with the uid of the client that asked for it
// (rpc::current_caller, SO_PEERCRED):
//   control: uid 0 added port vm1 (vhost-user, switch s0, vlan 10)
// A refused request changed nothing and is not logged (its client gets the
// reason); queries (stats, lists, show) are not logged.
#pragma once

#include "common/log.hpp"
#include "control/rpc/control_api.hpp"

namespace vnet::control {

class AuditedControl final : public PortControl, public SwitchControl, public DaemonControl {
public:
    AuditedControl(ControlApi inner, Logger log);
    ~AuditedControl() = default;
    AuditedControl(const AuditedControl&) = delete;
    AuditedControl& operator=(const AuditedControl&) = delete;

    // What add_control_methods takes: this, as every part.
    ControlApi api() { return {.ports = *this, .switches = *this, .daemon = *this}; }

    nlohmann::json stats() override;
    nlohmann::json list_ports() override;
    nlohmann::json show_ports(const std::optional<std::string>& only) override;
    void add_port(const std::string& name, const std::string& type, const std::string& peer,
                  const Settings& settings) override;
    void remove_port(const std::string& name) override;
    nlohmann::json set_port_policing(const std::string& name, std::optional<uint32_t> rate,
                                     std::optional<uint32_t> burst) override;
    nlohmann::json reload() override;
    nlohmann::json upgrade(const std::string& binary) override;
    void add_switch(const std::string& name, const Settings& settings) override;
    void remove_switch(const std::string& name) override;
    void change_uplink_peer(const std::string& switch_name, const std::string& address,
                            bool add) override;
    nlohmann::json list_switches(const std::optional<std::string>& only) override;
    nlohmann::json list_macs(const std::optional<std::string>& only) override;
    nlohmann::json flush_macs(const std::optional<std::string>& switch_name,
                              const std::optional<std::string>& port) override;
    nlohmann::json log_level(const std::optional<std::string>& level) override;
    nlohmann::json list_workers() override;

private:
    // "control: uid 0 " + what.
    void audit(const std::string& what) const;

    ControlApi inner_;
    Logger log_;
};

}  // namespace vnet::control
