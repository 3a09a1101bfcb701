// ControlApi: what the control socket's methods ask of a running vnetd,
// in the three parts that answer them: the port table (PortControl), the
// switch table (SwitchControl) and the daemon itself (DaemonControl).
//
// control_methods.cpp owns the wire side (each method's name, help,
// parameter schema and the decoding of its params); the parts implement
// these interfaces with the effects. The split keeps every byte of a
// request on one side of a typed call, so the whole request path (socket
// line -> method table -> schema -> decoding) runs in a unit test or a
// fuzzer against a recording implementation, with nothing performed.
//
// Every call runs on the control thread. A call that cannot be done throws
// (std::invalid_argument or std::runtime_error naming why, or an RpcError
// with its own code) and then has changed nothing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vnet::control {

// KEY = text, as the option table's rows parse it (what a flag would say).
using Settings = std::vector<std::pair<std::string, std::string>>;

// port.list, port.show, port.add, port.del, port.set.
class PortControl {
public:
    virtual nlohmann::json list_ports() = 0;
    // `only`: one port by name; none: every port.
    virtual nlohmann::json show_ports(const std::optional<std::string>& only) = 0;
    // `settings` are a [[port]] table's keys but name and type; `peer`
    // (empty: none) is a port to cross-connect to.
    virtual void add_port(const std::string& name, const std::string& type, const std::string& peer,
                          const Settings& settings) = 0;
    virtual void remove_port(const std::string& name) = 0;
    // Ingress policing at run time; the port's policing as it now is.
    virtual nlohmann::json set_port_policing(const std::string& name, std::optional<uint32_t> rate,
                                             std::optional<uint32_t> burst) = 0;

protected:
    ~PortControl() = default;
};

// switch.add, switch.del, uplink.peer.add/del, switch.list, mac.list.
class SwitchControl {
public:
    virtual void add_switch(const std::string& name, const Settings& settings) = 0;
    virtual void remove_switch(const std::string& name) = 0;
    virtual void change_uplink_peer(const std::string& switch_name, const std::string& address,
                                    bool add) = 0;
    virtual nlohmann::json list_switches(const std::optional<std::string>& only) = 0;
    virtual nlohmann::json list_macs(const std::optional<std::string>& only) = 0;

protected:
    ~SwitchControl() = default;
};

// stats, reload, upgrade, mac.flush, log.level, worker.list.
class DaemonControl {
public:
    virtual nlohmann::json stats() = 0;
    virtual nlohmann::json reload() = 0;
    // `binary`: empty for ours, as it is on disk now.
    virtual nlohmann::json upgrade(const std::string& binary) = 0;
    // Forgets the learned MACs of every switch, of `switch_name`'s, or of
    // the port `port` only; {"flushed": N}.
    virtual nlohmann::json flush_macs(const std::optional<std::string>& switch_name,
                                      const std::optional<std::string>& port) = 0;
    // Every logger's level: set to `level` when given; {"level": the level now}.
    virtual nlohmann::json log_level(const std::optional<std::string>& level) = 0;
    // Each worker: its CPU, mode, the queue pairs and switches it runs, its
    // busy and idle time.
    virtual nlohmann::json list_workers() = 0;

protected:
    ~DaemonControl() = default;
};

struct ControlApi {
    PortControl& ports;
    SwitchControl& switches;
    DaemonControl& daemon;
};

}  // namespace vnet::control
