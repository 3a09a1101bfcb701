#include "control/config/option_table.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/log_levels.hpp"
#include "control/config/option_rows.hpp"
#include "control/config/value_parsers.hpp"
#include "dataplane/switch/mac_address.hpp"
#include "io/packet_batch.hpp"

namespace vnet::control {

namespace {

// The [[switch]] being parsed is the last one (config.cpp appends it first).
SwitchConfig& current_switch(Config& c, std::string_view key) {
    if (c.switches.empty()) {
        throw std::invalid_argument(std::string(key) + " belongs in a [[switch]] table");
    }
    return c.switches.back();
}
const SwitchConfig& current_switch(const Config& c) {
    static const SwitchConfig defaults;
    return c.switches.empty() ? defaults : c.switches.back();
}

using D = DatapathConfig;

// Setters check that a value is well-formed and fits its field; what it
// means (ranges, combinations) is Config::validate's, once, for the config
// file and the flags alike.
//
// Row helpers keep each row on a line or two: a datapath number, a
// datapath on/off, a port on/off.
#define VNET_DATAPATH_UINT(field, value_name, help)                                         \
    OptionSpec {                                                                            \
#field, OptionScope::datapath, std::nullopt, value_name, help, {}, false,                 \
            [](Config& c, PortConfig*, std::string_view t) {                                      \
                using T = decltype(D::field);                                                     \
                c.datapath.field =                                                                \
                    static_cast<T>(parse_uint(#field, t, 0, std::numeric_limits<T>::max()));      \
            },                                                                                    \
            [](const Config& c, const PortConfig*) { return number(c.datapath.field); } \
    }
// A datapath number with its own range, said alike by the parser and the
// value name ("LOW..HIGH"), so a bad value reads the same range however it
// came (Config::validate keeps the same bounds for configs made in code).
#define VNET_DATAPATH_RANGE(field, low, high, help)                                         \
    OptionSpec {                                                                            \
#field, OptionScope::datapath, std::nullopt, #low ".." #high, help, {}, false,            \
            [](Config& c, PortConfig*, std::string_view t) {                                      \
                using T = decltype(D::field);                                                     \
                c.datapath.field = static_cast<T>(parse_uint(#field, t, low, high));              \
            },                                                                                    \
            [](const Config& c, const PortConfig*) { return number(c.datapath.field); } \
    }
#define VNET_DATAPATH_BOOL(field, help)                                                     \
    OptionSpec {                                                                            \
#field, OptionScope::datapath, std::nullopt, "on|off", help, {}, false,                   \
            [](Config& c, PortConfig*, std::string_view t) {                                      \
                c.datapath.field = parse_on_off(#field, t);                                       \
            },                                                                                    \
            [](const Config& c, const PortConfig*) { return on_off(c.datapath.field); } \
    }
// The port rows every kind takes; each kind's own rows are in its folder
// (control/ports/<kind>/<kind>_options.cpp).
constexpr std::array kPortOptions = {
    OptionSpec{"queue_pairs",
               OptionScope::port,
               std::nullopt,
               "N",
               "VM port: the most queue pairs the front end may enable (VIRTIO_NET_F_MQ, "
               "1..128; default 8); tap: its queues (IFF_MULTI_QUEUE above 1; default: its VM "
               "peer's). See \"Multiqueue\"",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   const uint64_t n = parse_uint("queue_pairs", t, 1, kMaxQueuePairs);
                   p->queue_pairs = static_cast<uint16_t>(n);
               },
               [](const Config&, const PortConfig* p) { return optional_number(p->queue_pairs); }},
    OptionSpec{"mtu",
               OptionScope::port,
               std::nullopt,
               "N",
               "offered to the guest (VIRTIO_NET_F_MTU) and set on the tap",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   p->mtu = static_cast<uint16_t>(parse_uint("mtu", t, 68, 65535));
               },
               [](const Config&, const PortConfig* p) { return optional_number(p->mtu); }},
    OptionSpec{"ingress_policing_rate",
               OptionScope::port,
               std::nullopt,
               "KBPS",
               "police what the port sends into vnetd to this rate, kbit/s (a token bucket, as "
               "OVS's); over it, packets drop as `policed`; 0 = off. See \"Ingress policing\"",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   p->ingress_policing_rate = static_cast<uint32_t>(parse_uint(
                       "ingress_policing_rate", t, 0, std::numeric_limits<uint32_t>::max()));
               },
               [](const Config&, const PortConfig* p) { return number(p->ingress_policing_rate); }},
    OptionSpec{
        "ingress_policing_burst",
        OptionScope::port,
        std::nullopt,
        "KBIT",
        "the policing bucket's size, kbit; 0 = OVS's default, 8000",
        {},
        false,
        [](Config&, PortConfig* p, std::string_view t) {
            p->ingress_policing_burst = static_cast<uint32_t>(
                parse_uint("ingress_policing_burst", t, 0, std::numeric_limits<uint32_t>::max()));
        },
        [](const Config&, const PortConfig* p) { return number(p->ingress_policing_burst); }},
    OptionSpec{"switch",
               OptionScope::port,
               std::nullopt,
               "NAME",
               "the [[switch]] the port is on (instead of a [[connect]])",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) { p->switch_name = t; },
               [](const Config&, const PortConfig* p) { return text_or_none(p->switch_name); }},
    OptionSpec{"vlan",
               OptionScope::port,
               std::nullopt,
               "1..4094",
               "switch port: its access VLAN, untagged on the port (default 1); with `trunk`, "
               "the trunk's native VLAN",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   p->vlan = static_cast<uint16_t>(parse_uint("vlan", t, 1, 4094));
               },
               [](const Config&, const PortConfig* p) { return optional_number(p->vlan); }},
    OptionSpec{
        "trunk",
        OptionScope::port,
        std::nullopt,
        "VLAN,...",
        "switch port: a trunk carrying these VLANs tagged (others are dropped as "
        "`vlan_not_allowed`); untagged frames only with `vlan`",
        {},
        false,
        [](Config&, PortConfig* p, std::string_view t) { p->trunk = parse_vlan_list("trunk", t); },
        [](const Config&, const PortConfig* p) {
            return join(p->trunk, [](uint16_t v) { return std::to_string(v); });
        }},
    OptionSpec{"allowed_macs",
               OptionScope::port,
               std::nullopt,
               "MAC,...",
               "switch port: anti-spoofing, the only source MACs it may send from (others are "
               "dropped as `spoofed`); none: any",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   p->allowed_macs = parse_mac_list("allowed_macs", t);
               },
               [](const Config&, const PortConfig* p) {
                   return join(p->allowed_macs, [](const packet::MacAddress& m) {
                       return dataplane::switching::to_string(m);
                   });
               }},
};

constexpr std::array kOtherOptions = {
    // ---- switches: a [[switch]] table each (config file only)
    OptionSpec{
        "mac_aging_s",
        OptionScope::switch_,
        std::nullopt,
        "N",
        "seconds before a MAC not seen as a source is forgotten (Linux bridge "
        "`ageing_time`)",
        {},
        false,
        [](Config& c, PortConfig*, std::string_view t) {
            current_switch(c, "mac_aging_s").mac_aging_s =
                static_cast<uint32_t>(parse_uint("mac_aging_s", t, 1, 1000000));
        },
        [](const Config& c, const PortConfig*) { return number(current_switch(c).mac_aging_s); }},
    OptionSpec{"mac_table_size",
               OptionScope::switch_,
               std::nullopt,
               "N",
               "MAC table entries; a full table floods frames to unknown MACs instead of growing "
               "(counted `table_full`)",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   current_switch(c, "mac_table_size").mac_table_size =
                       static_cast<uint32_t>(parse_uint("mac_table_size", t, 1, 1u << 20));
               },
               [](const Config& c, const PortConfig*) {
                   return number(current_switch(c).mac_table_size);
               }},
    OptionSpec{"destination_hold_us",
               OptionScope::switch_,
               std::nullopt,
               "N",
               "how long frames for a full destination (a guest's RX ring, a tap) are held and "
               "retried before they are dropped as `destination_full`; the source waits meanwhile",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   current_switch(c, "destination_hold_us").destination_hold_us =
                       static_cast<uint32_t>(parse_uint("destination_hold_us", t, 0, 1000000));
               },
               [](const Config& c, const PortConfig*) {
                   return number(current_switch(c).destination_hold_us);
               }},
    // ---- the datapath
    VNET_DATAPATH_RANGE(tx_batch, 0, 64,
                        "packets taken from a TX ring (a guest's, or a tap's reads in tap ↔ tap) "
                        "and submitted at once (VHOST_NET_BATCH); 0 = per-packet mode: one pop, "
                        "one `writev`, one used-ring publish per packet, no GRO"),
    VNET_DATAPATH_BOOL(tx_peek,
                       "the \"more is coming\" hint: while the ring still has packets, hold the "
                       "batch and take more, then submit once; `off` submits each packet as it is "
                       "taken (ring work stays batched)"),
    VNET_DATAPATH_BOOL(gro,
                       "user-space GRO: merge consecutive TCP segments of one flow in a batch "
                       "bound for a tap into one GSO write; tap stats count written frames, "
                       "`gro.frames`/`gro.segments` how many were merged from how many segments"),
    VNET_DATAPATH_BOOL(gro_udp,
                       "also merge same-size UDP datagrams into USO writes (needs Linux ≥ 6.2)"),
    VNET_DATAPATH_RANGE(
        rx_frames, 0, 256,
        "guest RX coalescing: hold the used-index publish and notify until this "
        "many frames are pending (ethtool -C rx-frames); 0 = one publish per burst"),
    VNET_DATAPATH_RANGE(rx_usecs, 0, 100000,
                        "guest RX coalescing: publish at the latest this long after the first held "
                        "frame (ethtool -C rx-usecs)"),
    VNET_DATAPATH_BOOL(adaptive_rx,
                       "switch ports (split rings): publish every burst to a guest at once but "
                       "defer its call while the switch's sources keep sending and the guest "
                       "still has over an eighth of its RX ring posted, at most 100 us (ethtool "
                       "-C adaptive-rx); cross-connects without rx_frames: a stream's bursts "
                       "are held for a sleeping guest until 3/4 of its ring or 500 us; a lone "
                       "frame, a guest that answers and an awake guest get them at once"),
    OptionSpec{"submit",
               OptionScope::datapath,
               std::nullopt,
               "io_uring|writev",
               "tap writes: one io_uring submission per burst, or one writev per packet",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   auto m = io::parse_batch_mode(std::string(t));
                   if (!m) {
                       bad_value("submit", t, "io_uring or writev");
                   }
                   c.datapath.submit = *m;
               },
               [](const Config& c, const PortConfig*) {
                   return std::string(io::to_string(c.datapath.submit));
               }},
    OptionSpec{"mode",
               OptionScope::datapath,
               std::nullopt,
               "adaptive|event|poll",
               "`adaptive`: spin while packets keep coming (up to `adaptive_spin_us` after the "
               "last), then sleep in epoll; `event`: sleep in epoll on kicks and tap readiness "
               "when idle; `poll`: spin (PMD style)",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   c.datapath.mode = parse_worker_mode(std::string(t));
               },
               [](const Config& c, const PortConfig*) {
                   return std::string(dataplane::to_string(c.datapath.mode));
               }},
    VNET_DATAPATH_UINT(busy_poll_us, "N",
                       "event mode: spin this long on idle rings before sleeping"),
    VNET_DATAPATH_UINT(adaptive_spin_us, "N",
                       "adaptive mode: the longest spin after the last packet before sleeping "
                       "(the spin is 4x the learned gap between bursts, at most this); 0 = "
                       "sleep at once"),
    VNET_DATAPATH_UINT(weight_packets, "N",
                       "packets per ring per turn before the next ring gets its turn "
                       "(VHOST_NET_PKT_WEIGHT)"),
    VNET_DATAPATH_UINT(weight_bytes, "N", "bytes per ring per turn (VHOST_NET_WEIGHT)"),
    OptionSpec{"worker_cpus", OptionScope::datapath, std::nullopt, "CPU,...",
               "one worker thread per CPU given, pinned there (the flag repeats: `--cpu 0 --cpu "
               "1`); none: one unpinned worker",
               "--cpu", false,
               [](Config& c, PortConfig*, std::string_view t) {
                   c.datapath.worker_cpus = parse_cpu_list("worker_cpus", t);
               },
               [](const Config& c, const PortConfig*) { return cpu_list(c.datapath.worker_cpus); }},
    // ---- the daemon
    OptionSpec{"log_level",
               OptionScope::daemon,
               std::nullopt,
               "LEVEL",
               "trace, debug, info, warn, error, off",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   if (!is_log_level(t)) {
                       throw std::invalid_argument(log_level_refusal("log_level", t));
                   }
                   c.log_level = t;
               },
               [](const Config& c, const PortConfig*) { return c.log_level; }},
    OptionSpec{
        "stats_interval_s", OptionScope::daemon, std::nullopt, "N",
        "log a stats table every N seconds; 0: only the final one", "--stats-interval", false,
        [](Config& c, PortConfig*, std::string_view t) {
            c.stats_interval_s = static_cast<uint32_t>(parse_uint("stats_interval_s", t, 0, 86400));
        },
        [](const Config& c, const PortConfig*) { return number(c.stats_interval_s); }},
    OptionSpec{"stats_file",
               OptionScope::daemon,
               std::nullopt,
               "FILE",
               "JSON stats, rewritten every stats interval (every second if none is set) and at "
               "exit",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) { c.stats_file = t; },
               [](const Config& c, const PortConfig*) { return text_or_none(c.stats_file); }},
    OptionSpec{"state_file",
               OptionScope::daemon,
               std::nullopt,
               "FILE",
               "keep the switches and ports added at run time (vnetctl, the CNI plugin) here, "
               "rewritten on each change, and re-create them at start-up (see \"Run-time "
               "state\"); empty: none",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) { c.state_file = t; },
               [](const Config& c, const PortConfig*) { return text_or_none(c.state_file); }},
    OptionSpec{"control_socket",
               OptionScope::daemon,
               std::nullopt,
               "PATH",
               "the control socket (JSON-RPC 2.0, one request per line; `vnetctl` uses it); its "
               "directory is created if missing; empty: none",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) { c.control_socket = t; },
               [](const Config& c, const PortConfig*) { return text_or_none(c.control_socket); }},
    OptionSpec{
        "control_socket_group",
        OptionScope::daemon,
        std::nullopt,
        "GROUP",
        "group (name or gid) given the control socket, for its members to use vnetctl",
        {},
        false,
        [](Config& c, PortConfig*, std::string_view t) {
            c.control_socket_group = parse_socket_group(std::string(t));
        },
        [](const Config& c, const PortConfig*) { return optional_number(c.control_socket_group); }},
    OptionSpec{"control_socket_mode",
               OptionScope::daemon,
               std::nullopt,
               "OCTAL",
               "permissions of the control socket, set when it is created",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   c.control_socket_mode = parse_mode("control_socket_mode", t);
               },
               [](const Config& c, const PortConfig*) { return octal(c.control_socket_mode); }},
    OptionSpec{"metrics_address",
               OptionScope::daemon,
               std::nullopt,
               "HOST:PORT",
               "serve Prometheus metrics at http://HOST:PORT/metrics (`:PORT`: every address; see "
               "Metrics; port 0: any free one, logged); empty: none",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   c.metrics_address = parse_metrics_address(t);
               },
               [](const Config& c, const PortConfig*) { return text_or_none(c.metrics_address); }},
    OptionSpec{"user",
               OptionScope::daemon,
               std::nullopt,
               "USER",
               "once taps, XDP and sockets are open, become this user (name or uid), keeping only "
               "CAP_NET_ADMIN while ports can still be added at run time (see \"Least privilege\")",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   c.run_as_user = parse_socket_owner(std::string(t), "user");
               },
               [](const Config& c, const PortConfig*) { return optional_number(c.run_as_user); }},
    OptionSpec{"group",
               OptionScope::daemon,
               std::nullopt,
               "GROUP",
               "with `user`: the group to become (name or gid); default: the user's primary group",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   c.run_as_group = parse_socket_group(std::string(t), "group");
               },
               [](const Config& c, const PortConfig*) { return optional_number(c.run_as_group); }},
    OptionSpec{"takeover_fd",
               OptionScope::daemon,
               std::nullopt,
               "FD",
               "internal: given by `vnetctl upgrade` to the vnetd it starts, the socket to the "
               "one it replaces (see \"Upgrade in place\"); never set it by hand",
               {},
               false,
               [](Config& c, PortConfig*, std::string_view t) {
                   c.takeover_fd = static_cast<int>(parse_uint("takeover_fd", t, 0, INT32_MAX));
               },
               [](const Config& c, const PortConfig*) {
                   return c.takeover_fd < 0 ? std::string() : std::to_string(c.takeover_fd);
               }},
};

#undef VNET_DATAPATH_UINT
#undef VNET_DATAPATH_RANGE
#undef VNET_DATAPATH_BOOL

// The one table: each port kind's own rows (in PortSettings' order, so a
// VM port's socket_path comes first), the rows every port takes, then the
// switch, datapath and daemon rows.
template <size_t... I>
std::vector<OptionSpec> compose_table(std::index_sequence<I...>) {
    std::vector<OptionSpec> rows;
    (
        [&rows] {
            const std::span<const OptionSpec> kind =
                std::variant_alternative_t<I, PortSettings>::options();
            rows.insert(rows.end(), kind.begin(), kind.end());
        }(),
        ...);
    rows.insert(rows.end(), kPortOptions.begin(), kPortOptions.end());
    rows.insert(rows.end(), kOtherOptions.begin(), kOtherOptions.end());
    return rows;
}

bool applies_to(const OptionSpec& o, const PortConfig& p) {
    return !o.port_type || *o.port_type == p.type();
}

}  // namespace

const char* to_string(OptionScope s) {
    switch (s) {
        case OptionScope::daemon:
            return "daemon";
        case OptionScope::datapath:
            return "datapath";
        case OptionScope::port:
            return "port";
        case OptionScope::switch_:
            return "switch";
    }
    return "unknown";
}

std::span<const OptionSpec> option_table() {
    static const std::vector<OptionSpec> table =
        compose_table(std::make_index_sequence<std::variant_size_v<PortSettings>>());
    return table;
}

const OptionSpec* find_option(OptionScope scope, std::string_view key) {
    for (const OptionSpec& o : option_table()) {
        if (o.scope == scope && o.key == key) {
            return &o;
        }
    }
    return nullptr;
}

std::string flag_of(const OptionSpec& option) {
    std::string flag = "--" + std::string(option.key);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

bool is_boolean(const OptionSpec& option) {
    return option.value_name == "on|off";
}

rpc::ParamType param_type(const OptionSpec& option) {
    const std::string_view v = option.value_name;
    if (is_boolean(option)) {
        return rpc::ParamType::on_off;
    }
    if (v == "PATH") {
        return rpc::ParamType::absolute_path;
    }
    if (v.ends_with(",...")) {
        return rpc::ParamType::list;
    }
    if (v == "N" || v == "KBPS" || v == "KBIT" || v == "OCTAL" || v == "FD" ||
        v.find("..") != std::string_view::npos) {
        return rpc::ParamType::integer_or_text;
    }
    return rpc::ParamType::string;
}

void apply_flag(Config& config, const OptionSpec& option, std::string_view text) {
    if (option.scope == OptionScope::switch_) {
        throw std::invalid_argument(std::string(option.key) + " belongs in a [[switch]] table");
    }
    if (option.scope != OptionScope::port) {
        option.set(config, nullptr, text);
        return;
    }
    for (PortConfig& p : config.ports) {
        if (applies_to(option, p)) {
            option.set(config, &p, text);
        }
    }
}

nlohmann::json datapath_json(const Config& config) {
    nlohmann::json j = nlohmann::json::object();
    for (const OptionSpec& o : option_table()) {
        if (o.scope != OptionScope::datapath) {
            continue;
        }
        const std::string text = o.get(config, nullptr);
        if (is_boolean(o)) {
            j[std::string(o.key)] = text == "on";
        } else if (!text.empty() && std::all_of(text.begin(), text.end(), ::isdigit)) {
            j[std::string(o.key)] = std::stoull(text);
        } else {
            j[std::string(o.key)] = text;
        }
    }
    return j;
}

std::string markdown_table() {
    const Config defaults;
    const PortConfig port_defaults;
    std::string out = "| flag / key | scope | default | meaning |\n|---|---|---|---|\n";
    for (const OptionSpec& o : option_table()) {
        std::string names = "`" + flag_of(o) + "`";
        if (!o.flag_alias.empty()) {
            names += " (`" + std::string(o.flag_alias) + "`)";
        }
        names += " / `" + std::string(o.key) + "`";
        if (o.scope == OptionScope::switch_) {
            names = "`" + std::string(o.key) + "`";  // no flag: switches live in the config file
        }
        std::string scope = to_string(o.scope);
        if (o.port_type) {
            scope += std::string(" (") + to_string(*o.port_type) + ")";
        }
        std::string def = o.get(defaults, &port_defaults);
        out += "| " + names + " | " + scope + " | " + (def.empty() ? "—" : "`" + def + "`") +
               " | " + std::string(o.help) + " |\n";
    }
    return out;
}

}  // namespace vnet::control
