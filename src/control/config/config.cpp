#include "control/config/config.hpp"

#include <arpa/inet.h>
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
#include "ports/tap/xdp_options.hpp"

namespace vnet::control {

namespace {
// ethtool -C bounds worth accepting: a guest ring holds at most 32768
// buffers, but holding more than a few hundred frames only adds latency; and
// a publish later than 100 ms looks like a dead link to the guest.
constexpr uint32_t kMaxRxFrames = 256;
constexpr uint32_t kMaxRxUsecs = 100000;
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
    if (port.type() == PortType::vhost_user) {
        return kDefaultQueuePairs;
    }
    const PortConfig* peer = peer_of(port.name);
    if (peer == nullptr) {
        return 1;
    }
    if (peer->queue_pairs) {
        return *peer->queue_pairs;
    }
    return peer->type() == PortType::vhost_user ? kDefaultQueuePairs : uint16_t{1};
}

namespace {

// The xdp keys of one port (docs/USAGE.md "XDP on the tap"). Whether FILE
// exists and holds SECTION is found out when the program is loaded.
void validate_xdp_keys(const PortConfig& port, const TapSettings& p) {
    const std::string where = "port '" + port.name + "': ";
    if (!ports::parse_xdp_mode(p.xdp_mode)) {
        throw std::invalid_argument(where + "xdp_mode must be auto, native or generic, not '" +
                                    p.xdp_mode + "'");
    }
    if (p.xdp.empty()) {
        if (!p.xdp_redirect.empty()) {
            throw std::invalid_argument(where + "xdp_redirect needs xdp (the program to attach)");
        }
        if (p.xdp_mode != "auto") {
            throw std::invalid_argument(where + "xdp_mode needs xdp (the program to attach)");
        }
        return;
    }
    if (ports::split_xdp_spec(p.xdp).file.empty()) {
        throw std::invalid_argument(where + "xdp must be FILE[:SECTION], not '" + p.xdp + "'");
    }
    const std::string file = ports::split_xdp_spec(p.xdp).file;
    if (file.find('/') != std::string::npos && file.front() != '/') {
        throw std::invalid_argument(where + "xdp FILE must be an absolute path or the bare name " +
                                    "of a shipped program, not '" + file + "'");
    }
    if (p.xdp_redirect.size() > 15) {
        throw std::invalid_argument(where + "xdp_redirect '" + p.xdp_redirect +
                                    "' is longer than 15 characters");
    }
    const std::string own = tap_device_name(port);
    if (p.xdp_redirect == own) {
        throw std::invalid_argument(where + "xdp_redirect names the port's own tap '" + own +
                                    "' (a program sends frames back with XDP_TX)");
    }
}

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

bool is_ip_address(const std::string& text) {
    in6_addr a{};
    return ::inet_pton(AF_INET, text.c_str(), &a) == 1 ||
           ::inet_pton(AF_INET6, text.c_str(), &a) == 1;
}

// VXLAN uplinks: on a switch, at most one per switch (vnetctl names an
// uplink by its switch) and one per VNI (the kernel refuses a second vxlan
// device with the same VNI and port).
void validate_vxlan_keys(const Config& c) {
    std::set<std::string> switches_with_uplink;
    std::set<uint32_t> vnis;
    for (const PortConfig& port : c.ports) {
        const VxlanSettings* vxlan = port.get<VxlanSettings>();
        if (vxlan == nullptr) {
            continue;
        }
        const VxlanSettings& p = *vxlan;
        const std::string where = "port '" + port.name + "': ";
        if (p.vni == 0) {
            throw std::invalid_argument(where + "a vxlan port needs vni (1..16777215)");
        }
        if (port.switch_name.empty()) {
            throw std::invalid_argument(where + "a vxlan port is a switch's uplink: give switch");
        }
        if (!switches_with_uplink.insert(port.switch_name).second) {
            throw std::invalid_argument(where + "switch '" + port.switch_name +
                                        "' has a vxlan uplink already (one per switch)");
        }
        if (!vnis.insert(p.vni).second) {
            throw std::invalid_argument(where + "vni " + std::to_string(p.vni) +
                                        " is another vxlan port's");
        }
        if (!p.vxlan_local.empty() && !is_ip_address(p.vxlan_local)) {
            throw std::invalid_argument(where + "vxlan_local '" + p.vxlan_local +
                                        "' is not an IPv4 or IPv6 address");
        }
        std::set<std::string> remotes;
        for (const std::string& r : p.vxlan_remote) {
            if (!is_ip_address(r)) {
                throw std::invalid_argument(where + "vxlan_remote '" + r +
                                            "' is not an IPv4 or IPv6 address");
            }
            if (!remotes.insert(r).second) {
                throw std::invalid_argument(where + "vxlan_remote " + r + " is given twice");
            }
        }
        if (p.vxlan_dev.size() > 15) {
            throw std::invalid_argument(where + "vxlan_dev is longer than 15 characters");
        }
    }
}

}  // namespace

std::string vxlan_device_name(const VxlanSettings& p) {
    return "vxlan" + std::to_string(p.vni);
}

std::string vxlan_tap_name(const VxlanSettings& p) {
    return "vxtap" + std::to_string(p.vni);
}

std::string tap_device_name(const PortConfig& p) {
    const TapSettings* tap = p.get<TapSettings>();
    return tap == nullptr || tap->ifname.empty() ? p.name : tap->ifname;
}

std::optional<uint16_t> Config::uplink_mtu_of(const std::string& switch_name) const {
    for (const PortConfig& p : ports) {
        if (p.type() == PortType::vxlan && p.switch_name == switch_name) {
            return p.mtu.value_or(kDefaultVxlanMtu);
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
    std::set<std::string> socket_paths;
    for (const PortConfig& p : ports) {
        if (p.name.empty()) {
            throw std::invalid_argument("a port has no name");
        }
        if (!names.insert(p.name).second) {
            throw std::invalid_argument("port name '" + p.name + "' is used twice");
        }
        if (const VhostUserSettings* vhost = p.get<VhostUserSettings>()) {
            const VhostUserSettings& v = *vhost;
            if (v.socket_path.empty() && v.listen_fd < 0) {
                throw std::invalid_argument("port '" + p.name + "': socket_path is required");
            }
            // vhost-user.rst "Backend program conventions": --fd "is
            // incompatible with --socket-path". An inherited socket is
            // already listening, so there is nothing to connect to either.
            if (v.listen_fd >= 0 && !v.socket_path.empty()) {
                throw std::invalid_argument(
                    "--fd and --socket-path cannot be given together: --fd serves a listening "
                    "socket vnetd inherited, --socket-path makes one");
            }
            if (v.listen_fd >= 0 && v.client) {
                throw std::invalid_argument(
                    "--fd and --client cannot be given together: --fd is a listening socket");
            }
            require_absolute("port '" + p.name + "': socket_path", v.socket_path);
            if (v.socket_path.size() >= 108) {
                throw std::invalid_argument(
                    "port '" + p.name + "': socket_path is longer than a unix socket allows (107)");
            }
            if (!v.socket_path.empty() && !socket_paths.insert(v.socket_path).second) {
                throw std::invalid_argument("port '" + p.name + "': socket_path " + v.socket_path +
                                            " is another port's");
            }
        }
        if (p.queue_pairs && (*p.queue_pairs == 0 || *p.queue_pairs > kMaxQueuePairs)) {
            // Worded as the option table's parse_uint says it.
            try {
                parse_uint("queue_pairs", std::to_string(*p.queue_pairs), 1, kMaxQueuePairs);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument("port '" + p.name + "': " + e.what());
            }
        }
        if (const TapSettings* tap = p.get<TapSettings>()) {
            if (tap->ifname.size() > 15) {
                throw std::invalid_argument("port '" + p.name +
                                            "': tap name longer than 15 characters");
            }
            validate_xdp_keys(p, *tap);
        }
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
    validate_vxlan_keys(*this);
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
        throw std::invalid_argument(where + ": type must be vhost-user, tap, null or vxlan, not '" +
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
