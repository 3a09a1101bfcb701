#include "control/config/config_diff.hpp"

#include <algorithm>

#include "control/config/option_table.hpp"

namespace vnet::control {

namespace {

bool runtime_option(std::string_view key) {
    return std::find(std::begin(kRunTimeOptions), std::end(kRunTimeOptions), key) !=
           std::end(kRunTimeOptions);
}

// The keys whose values differ between two versions of one port, through
// the option table (the same text the docs and stats show).
std::vector<std::string> changed_port_keys(const Config& before, const PortConfig& old_port,
                                           const Config& after, const PortConfig& new_port) {
    std::vector<std::string> keys;
    if (old_port.type() != new_port.type()) {
        keys.emplace_back("type");
    }
    for (const OptionSpec& o : option_table()) {
        if (o.scope == OptionScope::port && o.get(before, &old_port) != o.get(after, &new_port)) {
            keys.emplace_back(o.key);
        }
    }
    return keys;
}

// The [[switch]] keys whose values differ between two versions of one
// switch. The switch rows read the last switch of a config (as they set it
// while a table is read), so each version is read alone.
std::vector<std::string> changed_switch_keys(const SwitchConfig& old_switch,
                                             const SwitchConfig& new_switch) {
    Config before;
    before.switches = {old_switch};
    Config after;
    after.switches = {new_switch};
    std::vector<std::string> keys;
    for (const OptionSpec& o : option_table()) {
        if (o.scope == OptionScope::switch_ && o.get(before, nullptr) != o.get(after, nullptr)) {
            keys.emplace_back(o.key);
        }
    }
    return keys;
}

const SwitchConfig* find_switch(const Config& c, const std::string& name) {
    for (const SwitchConfig& s : c.switches) {
        if (s.name == name) {
            return &s;
        }
    }
    return nullptr;
}

std::string comma_list(const std::vector<std::string>& items) {
    std::string list;
    for (const std::string& item : items) {
        list += (list.empty() ? "" : ", ") + item;
    }
    return list;
}

void plan_switches(const Config& before, const Config& after, ConfigPlan& plan) {
    for (const SwitchConfig& old_switch : before.switches) {
        const SwitchConfig* new_switch = find_switch(after, old_switch.name);
        if (new_switch == nullptr) {
            plan.remove_switches.push_back(old_switch.name);
            continue;
        }
        std::vector<std::string> keys = changed_switch_keys(old_switch, *new_switch);
        if (!keys.empty()) {
            plan.refusals.push_back("switch '" + old_switch.name + "' changed (" +
                                    comma_list(keys) +
                                    "): remove it and its ports from the file and reload, then "
                                    "add them back");
        }
    }
    for (const SwitchConfig& new_switch : after.switches) {
        if (find_switch(before, new_switch.name) == nullptr) {
            plan.add_switches.push_back(new_switch);
        }
    }
}

std::string peer_name(const Config& c, const std::string& port) {
    const PortConfig* peer = c.peer_of(port);
    return peer == nullptr ? std::string() : peer->name;
}

}  // namespace

ConfigPlan plan_reload(const Config& before, const Config& after) {
    ConfigPlan plan;
    for (const OptionSpec& o : option_table()) {
        if (o.scope == OptionScope::port || o.scope == OptionScope::switch_) {
            continue;  // compared per port and per switch below
        }
        const std::string was = o.get(before, nullptr);
        const std::string now = o.get(after, nullptr);
        if (was == now) {
            continue;
        }
        if (runtime_option(o.key)) {
            plan.options.emplace_back(o.key, now);
        } else {
            plan.refusals.push_back(std::string(o.key) + " changed (" + was + " -> " + now +
                                    "): it takes a restart");
        }
    }
    for (const PortConfig& old_port : before.ports) {
        const PortConfig* new_port = after.find_port(old_port.name);
        if (new_port == nullptr) {
            plan.remove.push_back(old_port.name);
            continue;
        }
        std::vector<std::string> keys = changed_port_keys(before, old_port, after, *new_port);
        if (!keys.empty()) {
            plan.refusals.push_back("port '" + old_port.name + "' changed (" + comma_list(keys) +
                                    "): remove it from the file and reload, then add it back");
        }
        const std::string old_peer = peer_name(before, old_port.name);
        const std::string new_peer = peer_name(after, old_port.name);
        // A cross-connect between two ports that both stay cannot be rewired.
        if (old_peer != new_peer && (new_peer.empty() || before.find_port(new_peer) != nullptr) &&
            (old_peer.empty() || after.find_port(old_peer) != nullptr)) {
            plan.refusals.push_back("port '" + old_port.name + "' changed cross-connect ('" +
                                    old_peer + "' -> '" + new_peer +
                                    "'): remove it from the file and reload, then add it back");
        }
    }
    plan_switches(before, after, plan);
    // New ports, each after its new peer; a new port connected to a port
    // that stays needs that port to be in no other cross-connect.
    for (const PortConfig& new_port : after.ports) {
        if (before.find_port(new_port.name) != nullptr) {
            continue;
        }
        std::string peer = peer_name(after, new_port.name);
        const bool peer_is_new = !peer.empty() && before.find_port(peer) == nullptr;
        const bool peer_added_already =
            std::any_of(plan.add.begin(), plan.add.end(),
                        [&peer](const auto& a) { return a.first.name == peer; });
        if (peer_is_new && !peer_added_already) {
            peer.clear();  // the peer comes later and connects to this one
        }
        plan.add.emplace_back(new_port, peer);
    }
    return plan;
}

}  // namespace vnet::control
