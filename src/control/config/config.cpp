#include "control/config/config.hpp"

#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <stdexcept>

#include "common/did_you_mean.hpp"
#include "control/config/option_table.hpp"
#include "control/config/value_parsers.hpp"
#include "dataplane/switch/switch_core.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::control {

namespace {
// ethtool -C bounds worth accepting: a guest ring holds at most 32768
// buffers, but holding more than a few hundred frames only adds latency; and
// a publish later than 100 ms looks like a dead link to the guest.
constexpr uint32_t kMaxRxFrames = 256;
constexpr uint32_t kMaxRxUsecs = 100000;
}  // namespace

namespace {

// The queue pairs a kind serves unless told (its default_queue_pairs), if
// it has its own number: a kind without one follows its peer.
std::optional<uint16_t> default_queue_pairs(const PortConfig& port) {
    return std::visit(
        [](const auto& kind) -> std::optional<uint16_t> {
            if constexpr (requires { kind.default_queue_pairs; }) {
                return kind.default_queue_pairs;
            }
            return std::nullopt;
        },
        port.settings);
}

}  // namespace

const PortConfig* Config::find_port(const std::string& name) const {
    for (const PortConfig& p : ports) {
        if (p.name == name) {
            return &p;
        }
    }
    return nullptr;
}

const PortConfig* Config::peer_of(const std::string& name) const {
    for (const auto& [a, b] : connections) {
        if (a == name) {
            return find_port(b);
        }
        if (b == name) {
            return find_port(a);
        }
    }
    return nullptr;
}

std::optional<size_t> Config::switch_of(const std::string& port_name) const {
    const PortConfig* p = find_port(port_name);
    if (p == nullptr || p->switch_name.empty()) {
        return std::nullopt;
    }
    for (size_t i = 0; i < switches.size(); ++i) {
        if (switches[i].name == p->switch_name) {
            return i;
        }
    }
    return std::nullopt;
}

size_t Config::connection_of(const std::string& name) const {
    for (size_t i = 0; i < connections.size(); ++i) {
        if (connections[i].first == name || connections[i].second == name) {
            return i;
        }
    }
    return 0;
}

uint16_t Config::queue_pairs_of(const PortConfig& port) const {
    if (port.queue_pairs) {
        return *port.queue_pairs;
    }
    if (const auto own = default_queue_pairs(port)) {
        return *own;
    }
    const PortConfig* peer = peer_of(port.name);
    if (peer == nullptr) {
        return 1;
    }
    if (peer->queue_pairs) {
        return *peer->queue_pairs;
    }
    return default_queue_pairs(*peer).value_or(1);
}

namespace {

// The switches and their ports' keys (docs/USAGE.md "The L2 switch").
void validate_switches(const Config& c) {
    constexpr size_t kMaxMembers = dataplane::switching::kMaxSwitchMembers;
    constexpr uint32_t kMaxMacTableSize = 1u << 20;
    std::set<std::string> names;
    for (const SwitchConfig& s : c.switches) {
        if (s.name.empty()) {
            throw std::invalid_argument("a [[switch]] has no name");
        }
        if (!names.insert(s.name).second) {
            throw std::invalid_argument("switch name '" + s.name + "' is used twice");
        }
        const std::string where = "switch '" + s.name + "': ";
        if (s.mac_table_size == 0 || s.mac_table_size > kMaxMacTableSize) {
            throw std::invalid_argument(where + "mac_table_size must be 1.." +
                                        std::to_string(kMaxMacTableSize));
        }
        if (s.mac_aging_s == 0) {
            throw std::invalid_argument(where + "mac_aging_s must be at least 1");
        }
        size_t members = 0;
        for (const PortConfig& p : c.ports) {
            members += p.switch_name == s.name ? 1 : 0;
        }
        if (members > kMaxMembers) {
            throw std::invalid_argument(where + "more than " + std::to_string(kMaxMembers) +
                                        " ports");
        }
    }
    for (const PortConfig& p : c.ports) {
        const std::string where = "port '" + p.name + "': ";
        if (p.switch_name.empty()) {
            if (p.vlan || !p.trunk.empty() || !p.allowed_macs.empty()) {
                throw std::invalid_argument(where + "vlan, trunk and allowed_macs need switch");
            }
            continue;
        }
        if (!names.contains(p.switch_name)) {
            throw std::invalid_argument(where + "switch '" + p.switch_name +
                                        "' is not defined (no [[switch]] of that name)");
        }
        if (c.peer_of(p.name) != nullptr) {
            throw std::invalid_argument(where + "on switch '" + p.switch_name +
                                        "' and in a [[connect]] (a port is in one or the other)");
        }
    }
}

}  // namespace

std::optional<uint16_t> Config::uplink_mtu_of(const std::string& switch_name) const {
    // The kinds that are a switch's uplink say its MTU (uplink_mtu).
    for (const PortConfig& p : ports) {
        if (p.switch_name != switch_name) {
            continue;
        }
        const std::optional<uint16_t> mtu = std::visit(
            [&p](const auto& kind) -> std::optional<uint16_t> {
                if constexpr (requires { kind.uplink_mtu(p); }) {
                    return kind.uplink_mtu(p);
                }
                return std::nullopt;
            },
            p.settings);
        if (mtu) {
            return mtu;
        }
    }
    return std::nullopt;
}

namespace {

// Every path vnetd keeps is absolute: a relative one would mean the
// daemon's working directory, which is the shell's for a hand start, / under
// systemd, and whatever the old vnetd had in an upgrade in place, so the
// same config would name different files (docs/USAGE.md "Paths").
void require_absolute(const std::string& what, const std::string& path) {
    if (!path.empty() && path.front() != '/') {
        throw std::invalid_argument(what + " must be an absolute path, not '" + path + "'");
    }
}

}  // namespace

void Config::validate() const {
    require_absolute("control_socket", control_socket);
    require_absolute("stats_file", stats_file);
    require_absolute("state_file", state_file);
    if (run_as_group && !run_as_user) {
        throw std::invalid_argument("group is given without user: give both, or user alone");
    }
    std::set<std::string> names;
    for (const PortConfig& p : ports) {
        if (p.name.empty()) {
            throw std::invalid_argument("a port has no name");
        }
        if (!names.insert(p.name).second) {
            throw std::invalid_argument("port name '" + p.name + "' is used twice");
        }
        if (p.queue_pairs && (*p.queue_pairs == 0 || *p.queue_pairs > kMaxQueuePairs)) {
            // Worded as the option table's parse_uint says it.
            try {
                parse_uint("queue_pairs", std::to_string(*p.queue_pairs), 1, kMaxQueuePairs);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument("port '" + p.name + "': " + e.what());
            }
        }
        // The kind's own keys, by the kind (control/ports/<kind>/).
        std::visit(
            [&](const auto& kind) {
                if constexpr (requires { kind.validate(p, *this); }) {
                    kind.validate(p, *this);
                }
            },
            p.settings);
    }
    std::set<std::string> connected;
    for (const auto& [a, b] : connections) {
        for (const std::string& n : {a, b}) {
            if (find_port(n) == nullptr) {
                throw std::invalid_argument("connect: no port named '" + n + "'");
            }
            if (!connected.insert(n).second) {
                throw std::invalid_argument("port '" + n +
                                            "' is in two connections (one cross-connect per port)");
            }
        }
        if (a == b) {
            throw std::invalid_argument("connect: a port cannot be connected to itself");
        }
    }
    validate_switches(*this);
    if (datapath.tx_batch > packet::kMaxBurstPackets) {
        throw std::invalid_argument("tx_batch must be 0..64 (0: per-packet)");
    }
    if (datapath.rx_frames > kMaxRxFrames) {
        throw std::invalid_argument("rx_frames must be 0..256");
    }
    if (datapath.rx_usecs > kMaxRxUsecs) {
        throw std::invalid_argument("rx_usecs must be 0..100000");
    }
    if (datapath.weight_packets == 0 || datapath.weight_bytes == 0) {
        throw std::invalid_argument("weight_packets and weight_bytes must be > 0");
    }
}

namespace {

// A TOML value as the text the option table parses: what a flag would say.
std::string value_text(const toml::node& node, std::string_view key) {
    // By the node's own type: toml++'s value<T>() converts between them
    // (an integer reads as a bool).
    if (const auto* v = node.as_string()) {
        return v->get();
    }
    if (const auto* v = node.as_boolean()) {
        return v->get() ? "on" : "off";
    }
    if (const auto* v = node.as_integer()) {
        return std::to_string(v->get());
    }
    if (const toml::array* a = node.as_array()) {
        std::string out;
        for (const toml::node& item : *a) {
            // Appended in two steps: g++ 12 at -O3 warns (-Wrestrict, falsely)
            // on "," + a temporary string.
            if (!out.empty()) {
                out += ',';
            }
            out += value_text(item, key);
        }
        return out;
    }
    throw std::invalid_argument(std::string(key) +
                                " must be a string, a number, on/off or a list of those");
}

// One KEY = text through its row of the option table: how the config
// file's tables and the run-time methods (port.add, switch.add) set a key,
// so a key is parsed and refused the same way everywhere. An unknown key
// is an error that names it; every message starts with `where`.
void apply_setting(OptionScope scope, const std::string& where, std::string_view key,
                   std::string_view text, Config& config, PortConfig* port) {
    const OptionSpec* option = find_option(scope, key);
    if (option == nullptr) {
        std::vector<std::string_view> keys;
        for (const OptionSpec& o : option_table()) {
            if (o.scope == scope) {
                keys.push_back(o.key);
            }
        }
        throw std::invalid_argument(where + ": unknown key '" + std::string(key) + "'" +
                                    did_you_mean(key, keys));
    }
    try {
        option->set(config, port, text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(where + ": " + e.what());
    }
}

// Every key of `table` through the option table (the caller adds the file).
void apply_table(const toml::table& table, OptionScope scope, const std::string& where,
                 Config& config, PortConfig* port,
                 std::initializer_list<std::string_view> structural = {}) {
    for (const auto& [k, node] : table) {
        const std::string_view key = k.str();
        if (std::find(structural.begin(), structural.end(), key) != structural.end()) {
            continue;
        }
        std::string text;
        try {
            text = value_text(node, key);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(where + ": " + e.what());
        }
        apply_setting(scope, where, key, text, config, port);
    }
}

// A port of `type` named `name`, with every key at its default.
PortConfig new_port(const std::string& name, const std::string& type, const std::string& where) {
    PortConfig p;
    p.name = name;
    auto parsed = parse_port_type(type);
    if (!parsed) {
        throw std::invalid_argument(where + ": type must be " + port_type_names() + ", not '" +
                                    type + "'");
    }
    p.settings = default_settings(*parsed);
    return p;
}

PortConfig parse_port(const toml::table& t, Config& config) {
    const std::string name = t["name"].value<std::string>().value_or("");
    const std::string where = "port '" + name + "'";
    PortConfig p = new_port(name, t["type"].value<std::string>().value_or(""), where);
    apply_table(t, OptionScope::port, where, config, &p, {"name", "type"});
    return p;
}

Config parse_root(const toml::table& root) {
    Config c;
    for (const auto& [k, node] : root) {
        const std::string_view key = k.str();
        if (key != "daemon" && key != "datapath" && key != "port" && key != "connect" &&
            key != "switch") {
            throw std::invalid_argument(
                "unknown key '" + std::string(key) +
                "' (tables: [daemon], [datapath], [[switch]], [[port]], [[connect]])" +
                did_you_mean(key, {"daemon", "datapath", "switch", "port", "connect"}));
        }
    }
    if (const toml::table* d = root["daemon"].as_table()) {
        apply_table(*d, OptionScope::daemon, "[daemon]", c, nullptr);
    }
    if (const toml::table* dp = root["datapath"].as_table()) {
        apply_table(*dp, OptionScope::datapath, "[datapath]", c, nullptr);
    }
    if (const toml::array* switches = root["switch"].as_array()) {
        for (const auto& sw : *switches) {
            if (const toml::table* t = sw.as_table()) {
                // The switch rows of the option table set the last switch.
                c.switches.push_back(SwitchConfig{(*t)["name"].value<std::string>().value_or("")});
                apply_table(*t, OptionScope::switch_, "switch '" + c.switches.back().name + "'", c,
                            nullptr, {"name"});
            }
        }
    }
    if (const toml::array* ports = root["port"].as_array()) {
        for (const auto& p : *ports) {
            if (const toml::table* t = p.as_table()) {
                c.ports.push_back(parse_port(*t, c));
            }
        }
    }
    if (const toml::array* conns = root["connect"].as_array()) {
        for (const auto& conn : *conns) {
            const toml::table* t = conn.as_table();
            const toml::array* pair = t ? (*t)["ports"].as_array() : nullptr;
            if (pair == nullptr || pair->size() != 2 || t->size() != 1) {
                throw std::invalid_argument(
                    "each [[connect]] needs ports = [\"a\", \"b\"] "
                    "and nothing else");
            }
            c.connections.emplace_back((*pair)[0].value<std::string>().value_or(""),
                                       (*pair)[1].value<std::string>().value_or(""));
        }
    }
    return c;
}

}  // namespace

PortConfig port_from_settings(const std::string& name, const std::string& type,
                              const std::vector<std::pair<std::string, std::string>>& settings,
                              Config& config) {
    const std::string where = "port '" + name + "'";
    PortConfig p = new_port(name, type, where);
    for (const auto& [key, text] : settings) {
        apply_setting(OptionScope::port, where, key, text, config, &p);
    }
    return p;
}

SwitchConfig switch_from_settings(
    const std::string& name, const std::vector<std::pair<std::string, std::string>>& settings) {
    // The switch rows of the option table set the last switch of a config,
    // as they do while a [[switch]] table is read.
    Config scratch;
    scratch.switches.push_back(SwitchConfig{name});
    for (const auto& [key, text] : settings) {
        apply_setting(OptionScope::switch_, "switch '" + name + "'", key, text, scratch, nullptr);
    }
    return scratch.switches.back();
}

Config load_config_file(const std::string& path) {
    if (::access(path.c_str(), R_OK) != 0) {
        // toml++ would say "PATH:0:0: File could not be opened" for any cause.
        const int err = errno;
        throw std::invalid_argument("config " + path + ": " +
                                    (err == ENOENT   ? std::string("no such file")
                                     : err == EACCES ? std::string("permission denied")
                                                     : std::string(std::strerror(err))));
    }
    toml::table root;
    try {
        root = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        const toml::source_position at = e.source().begin;
        throw std::invalid_argument(path + ":" + std::to_string(at.line) + ":" +
                                    std::to_string(at.column) + ": " +
                                    std::string(e.description()));
    }
    Config c;
    try {
        c = parse_root(root);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(path + ": " + e.what());
    }
    c.validate();
    return c;
}

}  // namespace vnet::control
