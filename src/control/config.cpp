#include "control/config.hpp"

#include <grp.h>
#include <pwd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>

#include "ports/packet_burst.hpp"
#include "ports/xdp_options.hpp"

namespace vnet::control {

namespace {
// ethtool -C bounds worth accepting: a guest ring holds at most 32768
// buffers, but holding more than a few hundred frames only adds latency; and
// a publish later than 100 ms looks like a dead link to the guest.
constexpr uint32_t kMaxRxFrames = 256;
constexpr uint32_t kMaxRxUsecs = 100000;
}  // namespace

const char* to_string(PortType t) {
    switch (t) {
        case PortType::vhost_user:
            return "vhost-user";
        case PortType::tap:
            return "tap";
        case PortType::null:
            return "null";
    }
    return "unknown";
}

std::optional<PortType> parse_port_type(const std::string& s) {
    if (s == "vhost-user")
        return PortType::vhost_user;
    if (s == "tap")
        return PortType::tap;
    if (s == "null")
        return PortType::null;
    return std::nullopt;
}

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
    if (port.type == PortType::vhost_user) {
        return kDefaultQueuePairs;
    }
    const PortConfig* peer = peer_of(port.name);
    if (peer == nullptr) {
        return 1;
    }
    if (peer->queue_pairs) {
        return *peer->queue_pairs;
    }
    return peer->type == PortType::vhost_user ? kDefaultQueuePairs : uint16_t{1};
}

namespace {

// The xdp keys of one port (docs/USAGE.md "XDP on the tap"). Whether FILE
// exists and holds SECTION is found out when the program is loaded.
void validate_xdp_keys(const PortConfig& p) {
    const std::string where = "port '" + p.name + "': ";
    bool any = !p.xdp.empty() || !p.xdp_redirect.empty() || p.xdp_mode != "auto";
    if (any && p.type != PortType::tap) {
        throw std::invalid_argument(where + "xdp, xdp_mode and xdp_redirect are for tap ports");
    }
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
    if (p.xdp_redirect.size() > 15) {
        throw std::invalid_argument(where + "xdp_redirect '" + p.xdp_redirect +
                                    "' is longer than 15 characters");
    }
    const std::string& own = p.ifname.empty() ? p.name : p.ifname;
    if (p.xdp_redirect == own) {
        throw std::invalid_argument(where + "xdp_redirect names the port's own tap '" + own +
                                    "' (a program sends frames back with XDP_TX)");
    }
}

}  // namespace

void Config::validate() const {
    std::set<std::string> names;
    for (const PortConfig& p : ports) {
        if (p.name.empty()) {
            throw std::invalid_argument("a port has no name");
        }
        if (!names.insert(p.name).second) {
            throw std::invalid_argument("port name '" + p.name + "' is used twice");
        }
        if (p.type == PortType::vhost_user) {
            if (p.socket_path.empty() && p.listen_fd < 0) {
                throw std::invalid_argument("port '" + p.name + "': socket_path is required");
            }
            if (p.socket_path.size() >= 108) {
                throw std::invalid_argument(
                    "port '" + p.name + "': socket_path is longer than a unix socket allows (107)");
            }
        }
        if (p.queue_pairs && (*p.queue_pairs == 0 || *p.queue_pairs > kMaxQueuePairs)) {
            throw std::invalid_argument("port '" + p.name + "': queue_pairs must be 1.." +
                                        std::to_string(kMaxQueuePairs) + ", not " +
                                        std::to_string(*p.queue_pairs));
        }
        if (p.type == PortType::tap && p.ifname.size() > 15) {
            throw std::invalid_argument("port '" + p.name +
                                        "': tap name longer than 15 characters");
        }
        validate_xdp_keys(p);
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
    if (datapath.tx_batch > ports::kMaxBurstPackets) {
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

uid_t parse_socket_owner(const std::string& user_or_uid) {
    if (const passwd* pw = ::getpwnam(user_or_uid.c_str())) {
        return pw->pw_uid;
    }
    try {
        return static_cast<uid_t>(std::stoul(user_or_uid));
    } catch (const std::exception&) {
        throw std::invalid_argument("socket owner '" + user_or_uid + "' is no user name or uid");
    }
}

gid_t parse_socket_group(const std::string& group_or_gid) {
    if (const group* gr = ::getgrnam(group_or_gid.c_str())) {
        return gr->gr_gid;
    }
    try {
        return static_cast<gid_t>(std::stoul(group_or_gid));
    } catch (const std::exception&) {
        throw std::invalid_argument("socket group '" + group_or_gid + "' is no group name or gid");
    }
}

dataplane::WorkerMode parse_worker_mode(const std::string& s) {
    if (s == "event")
        return dataplane::WorkerMode::event;
    if (s == "poll")
        return dataplane::WorkerMode::poll;
    throw std::invalid_argument("mode must be event or poll, not '" + s + "'");
}

namespace {

template <class T>
T get_or(const toml::table& t, const char* key, T fallback) {
    return t[key].value<T>().value_or(fallback);
}

PortConfig parse_port(const toml::table& t) {
    PortConfig p;
    p.name = get_or<std::string>(t, "name", "");
    std::string type = get_or<std::string>(t, "type", "");
    auto parsed = parse_port_type(type);
    if (!parsed) {
        throw std::invalid_argument("port '" + p.name +
                                    "': type must be vhost-user, tap or null, not '" + type + "'");
    }
    p.type = *parsed;
    p.socket_path = get_or<std::string>(t, "socket_path", "");
    p.client = get_or<bool>(t, "client", false);
    if (auto v = t["queue_pairs"].value<int64_t>()) {
        // Out-of-range values are kept out of range for validate() to name.
        p.queue_pairs = static_cast<uint16_t>(std::clamp<int64_t>(*v, 0, 0xffff));
    }
    if (auto v = t["socket_owner"].value<std::string>())
        p.socket_owner = parse_socket_owner(*v);
    if (auto v = t["socket_group"].value<std::string>())
        p.socket_group = parse_socket_group(*v);
    if (auto v = t["socket_mode"].value<std::string>()) {
        p.socket_mode = static_cast<mode_t>(std::stoul(*v, nullptr, 8));
    }
    if (auto v = t["mtu"].value<int64_t>())
        p.mtu = static_cast<uint16_t>(*v);
    p.ifname = get_or<std::string>(t, "tap", p.type == PortType::tap ? p.name : "");
    p.persist = get_or<bool>(t, "persist", false);
    p.napi = get_or<bool>(t, "napi", false);
    p.napi_frags = get_or<bool>(t, "napi_frags", false);
    if (auto v = t["txqueuelen"].value<int64_t>())
        p.txqueuelen = static_cast<unsigned>(*v);
    p.xdp = get_or<std::string>(t, "xdp", "");
    p.xdp_mode = get_or<std::string>(t, "xdp_mode", p.xdp_mode);
    p.xdp_redirect = get_or<std::string>(t, "xdp_redirect", "");
    return p;
}

}  // namespace

Config load_config_file(const std::string& path) {
    toml::table root;
    try {
        root = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        throw std::invalid_argument(path + ": " + std::string(e.description()));
    }
    Config c;
    if (const toml::table* d = root["daemon"].as_table()) {
        c.log_level = get_or<std::string>(*d, "log_level", c.log_level);
        c.stats_interval_s = static_cast<uint32_t>(get_or<int64_t>(*d, "stats_interval_s", 0));
        c.stats_file = get_or<std::string>(*d, "stats_file", "");
    }
    if (const toml::table* dp = root["datapath"].as_table()) {
        DatapathConfig& d = c.datapath;
        d.tx_batch = static_cast<uint16_t>(
            std::clamp<int64_t>(get_or<int64_t>(*dp, "tx_batch", d.tx_batch), 0, 0xffff));
        d.tx_peek = get_or<bool>(*dp, "tx_peek", d.tx_peek);
        d.gro = get_or<bool>(*dp, "gro", d.gro);
        d.gro_udp = get_or<bool>(*dp, "gro_udp", d.gro_udp);
        d.rx_frames = static_cast<uint32_t>(
            std::clamp<int64_t>(get_or<int64_t>(*dp, "rx_frames", 0), 0, UINT32_MAX));
        d.rx_usecs = static_cast<uint32_t>(
            std::clamp<int64_t>(get_or<int64_t>(*dp, "rx_usecs", 0), 0, UINT32_MAX));
        std::string submit = get_or<std::string>(*dp, "submit", "io_uring");
        auto mode = io::parse_batch_mode(submit);
        if (!mode) {
            throw std::invalid_argument("submit must be io_uring or writev, not '" + submit + "'");
        }
        d.submit = *mode;
        d.weight_packets =
            static_cast<uint32_t>(get_or<int64_t>(*dp, "weight_packets", d.weight_packets));
        d.weight_bytes =
            static_cast<uint32_t>(get_or<int64_t>(*dp, "weight_bytes", d.weight_bytes));
        d.mode = parse_worker_mode(get_or<std::string>(*dp, "mode", "event"));
        d.busy_poll_us = static_cast<uint32_t>(get_or<int64_t>(*dp, "busy_poll_us", 0));
        if (const toml::array* cpus = (*dp)["worker_cpus"].as_array()) {
            for (const auto& cpu : *cpus) {
                d.worker_cpus.push_back(static_cast<int>(cpu.value<int64_t>().value_or(0)));
            }
        }
    }
    if (const toml::array* ports = root["port"].as_array()) {
        for (const auto& p : *ports) {
            if (const toml::table* t = p.as_table()) {
                c.ports.push_back(parse_port(*t));
            }
        }
    }
    if (const toml::array* conns = root["connect"].as_array()) {
        for (const auto& conn : *conns) {
            const toml::table* t = conn.as_table();
            const toml::array* pair = t ? (*t)["ports"].as_array() : nullptr;
            if (pair == nullptr || pair->size() != 2) {
                throw std::invalid_argument("each [[connect]] needs ports = [\"a\", \"b\"]");
            }
            c.connections.emplace_back((*pair)[0].value<std::string>().value_or(""),
                                       (*pair)[1].value<std::string>().value_or(""));
        }
    }
    c.validate();
    return c;
}

}  // namespace vnet::control
