// RecordingControlApi: the three ControlApi parts in one that does nothing
// but write down each call it gets, as one line of text. The control methods' unit tests and
// the control fuzz target run the whole request path against it, so what a
// request would have done is visible and nothing is performed. port.add
// and switch.add parse their settings through the real option table into
// a scratch config, as the daemon does, so the value parsers run too.
#pragma once

#include <string>
#include <vector>

#include "control/config/config.hpp"
#include "control/rpc/control_api.hpp"

namespace vnet::control {

// Not final: a test overrides one answer (control_methods_test's stats).
class RecordingControlApi : public PortControl, public SwitchControl, public DaemonControl {
public:
    virtual ~RecordingControlApi() = default;
    std::vector<std::string> calls;

    // What add_control_methods takes: this, as every part.
    ControlApi parts() { return {.ports = *this, .switches = *this, .daemon = *this}; }

    nlohmann::json stats() override { return record("stats"); }
    nlohmann::json list_ports() override { return record("list_ports"); }
    nlohmann::json show_ports(const std::optional<std::string>& only) override {
        return record("show_ports " + only.value_or("*"));
    }
    void add_port(const std::string& name, const std::string& type, const std::string& peer,
                  const Settings& settings) override {
        Config scratch;
        port_from_settings(name, type, settings, scratch);  // throws as the daemon's would
        std::string line = "add_port " + name + " " + type + " peer=" + peer;
        for (const auto& [key, text] : settings) {
            line += " " + key + "=" + text;
        }
        record(line);
    }
    void remove_port(const std::string& name) override { record("remove_port " + name); }
    nlohmann::json set_port_policing(const std::string& name, std::optional<uint32_t> rate,
                                     std::optional<uint32_t> burst) override {
        return record("set_port_policing " + name + " " + (rate ? std::to_string(*rate) : "-") +
                      " " + (burst ? std::to_string(*burst) : "-"));
    }
    nlohmann::json reload() override { return record("reload"); }
    nlohmann::json upgrade(const std::string& binary) override {
        return record("upgrade " + binary);
    }
    void add_switch(const std::string& name, const Settings& settings) override {
        switch_from_settings(name, settings);
        record("add_switch " + name);
    }
    void remove_switch(const std::string& name) override { record("remove_switch " + name); }
    void change_uplink_peer(const std::string& switch_name, const std::string& address,
                            bool add) override {
        record(std::string(add ? "add" : "del") + "_uplink_peer " + switch_name + " " + address);
    }
    nlohmann::json list_switches(const std::optional<std::string>& only) override {
        return record("list_switches " + only.value_or("*"));
    }
    nlohmann::json list_macs(const std::optional<std::string>& only) override {
        return record("list_macs " + only.value_or("*"));
    }
    nlohmann::json flush_macs(const std::optional<std::string>& switch_name,
                              const std::optional<std::string>& port) override {
        record("flush_macs switch=" + switch_name.value_or("*") + " port=" + port.value_or("*"));
        return nlohmann::json{{"flushed", 3}};
    }
    nlohmann::json log_level(const std::optional<std::string>& level) override {
        record("log_level " + level.value_or("?"));
        return nlohmann::json{{"level", level.value_or("info")}};
    }
    nlohmann::json list_workers() override { return record("list_workers"); }

private:
    nlohmann::json record(std::string line) {
        calls.push_back(std::move(line));
        return nlohmann::json::array();
    }
};

}  // namespace vnet::control
