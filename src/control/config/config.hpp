// vnetd's configuration: what ports exist, which are cross-connected, and
// the datapath knobs. Built from a TOML file or from the one-pair command
// line; either way it is validated here, once, at start-up (exceptions
// with a message that names the key). Option names are the same everywhere:
// config key, CLI flag (with dashes), stats label.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/config/port_type.hpp"
#include "dataplane/forward_path.hpp"
#include "dataplane/switch/switch_datapath.hpp"
#include "dataplane/worker.hpp"
#include "io/packet_batch.hpp"
#include "packet/wire.hpp"
#include "ports/queue_pair_options.hpp"

namespace vnet::control {

// vhost_user::kMaxQueuePairs (DPDK's VHOST_MAX_QUEUE_PAIRS).
inline constexpr uint16_t kMaxQueuePairs = 128;

struct PortConfig {
    std::string name;
    // The kind's own keys (control/ports/<kind>/<kind>_settings.hpp); the
    // alternative held is the port's type.
    PortSettings settings = NullSettings{};
    // The keys every kind takes.
    // vhost-user: the most queue pairs the front end may enable (GET_QUEUE_NUM);
    // tap: tap queues (IFF_MULTI_QUEUE). Unset: Config::queue_pairs_of.
    std::optional<uint16_t> queue_pairs;
    std::optional<uint16_t> mtu;  // offered to the guest (VIRTIO_NET_F_MTU) / set on a tap
    // Ingress policing of what the port sends (OVS names): kbit/s (0: off), kbit (0: 8000).
    uint32_t ingress_policing_rate = 0;
    uint32_t ingress_policing_burst = 0;
    // L2 switch membership (dataplane/switch/, docs/USAGE.md "The L2 switch"):
    // the switch's name (empty: none), the access VLAN (with `trunk`: the
    // native, untagged VLAN), the VLANs carried tagged, and the only source
    // MACs the port may send from (empty: any).
    std::string switch_name;
    std::optional<uint16_t> vlan;
    std::vector<uint16_t> trunk;
    std::vector<packet::MacAddress> allowed_macs;

    PortType type() const { return static_cast<PortType>(settings.index()); }
    // The kind's settings if the port is of that kind, else nullptr.
    template <class Kind>
    Kind* get() {
        return std::get_if<Kind>(&settings);
    }
    template <class Kind>
    const Kind* get() const {
        return std::get_if<Kind>(&settings);
    }
};

// One [[switch]] table: an L2 learning switch its ports name.
struct SwitchConfig {
    std::string name;
    uint32_t mac_aging_s = dataplane::switching::kDefaultMacAgingSeconds;
    uint32_t mac_table_size = dataplane::switching::kDefaultMacTableSize;
    // How long frames for a full destination wait before they are dropped.
    uint32_t destination_hold_us = dataplane::switching::kDefaultHoldNs / 1000;
};

// The datapath rows: the per-queue-pair options (tx_batch, tx_peek, gro,
// gro_udp, rx_frames, rx_usecs, adaptive_rx, the weights), handed down as
// they are to every engine, and what is per worker or per port kind.
struct DatapathConfig : ports::QueuePairOptions {
    io::BatchMode submit = io::BatchMode::io_uring;
    dataplane::WorkerMode mode = dataplane::WorkerMode::adaptive;
    uint32_t busy_poll_us = 0;                                      // event mode
    uint32_t adaptive_spin_us = dataplane::kDefaultAdaptiveSpinUs;  // adaptive mode's ceiling
    std::vector<int> worker_cpus;  // one worker per entry; empty: one unpinned worker
};

inline constexpr std::string_view kDefaultControlSocket = "/run/vnetd/vnetd.ctl";

struct Config {
    std::vector<PortConfig> ports;
    std::vector<std::pair<std::string, std::string>> connections;  // port names
    std::vector<SwitchConfig> switches;
    DatapathConfig datapath;
    std::string log_level = "info";
    uint32_t stats_interval_s = 0;  // 0: final stats only
    std::string stats_file;         // JSON written every interval and at exit
    // The run-time state file (run_state.hpp): what vnetctl added, kept
    // across a restart; empty: none.
    std::string state_file;
    // The control socket (vnetctl); empty: none. The default path's
    // directory is created when missing.
    std::string control_socket = std::string(kDefaultControlSocket);
    std::optional<gid_t> control_socket_group;
    mode_t control_socket_mode = 0660;
    // The Prometheus endpoint (control/metrics), HOST:PORT; empty: none.
    std::string metrics_address;
    // Least privilege (control/privileges): the user and group vnetd
    // becomes once its ports are open; none: it stays as started.
    std::optional<uid_t> run_as_user;
    std::optional<gid_t> run_as_group;
    // Upgrade in place (control/lifecycle/upgrade/): the socket to the vnetd this one
    // replaces; set only by that vnetd when it starts us. -1: none.
    int takeover_fd = -1;

    const PortConfig* find_port(const std::string& name) const;
    // The port's cross-connect partner, if it has one.
    const PortConfig* peer_of(const std::string& name) const;
    // Index in `switches` of the switch the port is on, if it is on one.
    std::optional<size_t> switch_of(const std::string& port_name) const;
    // Index of the cross-connect the port is in (0 when it is in none):
    // what dataplane::Placement places its queue pairs by.
    size_t connection_of(const std::string& name) const;
    // How many queue pairs a port serves: its queue_pairs if set; a VM
    // port kDefaultQueuePairs (it serves as many as the front end enables
    // of them); a tap or null port as many as its peer (a VM's queue pair q
    // uses tap queue q), or 1.
    uint16_t queue_pairs_of(const PortConfig& port) const;
    // The MTU of the switch's vxlan uplink (its `mtu`, else
    // kDefaultVxlanMtu), if it has one: what a VM port on that switch
    // offers its guest unless the port sets `mtu` itself.
    std::optional<uint16_t> uplink_mtu_of(const std::string& switch_name) const;
    // Throws std::invalid_argument naming what is wrong.
    void validate() const;
};

Config load_config_file(const std::string& path);

// A port from its name, type and settings given as text, KEY = VALUE with the
// [[port]] keys (what a flag would say): how ports are added at run time
// (vnetctl port add), through the same option rows as the config file.
// Throws std::invalid_argument naming the port and the key. Not validated
// against the other ports: Config::validate does that.
PortConfig port_from_settings(const std::string& name, const std::string& type,
                              const std::vector<std::pair<std::string, std::string>>& settings,
                              Config& config);

// A switch from its name and settings given as text, KEY = VALUE with the
// [[switch]] keys: how switches are added at run time (vnetctl switch add),
// through the same option rows as the config file's [[switch]] tables.
// Throws std::invalid_argument naming the switch and the key. Not validated
// against the other switches: Config::validate does that.
SwitchConfig switch_from_settings(const std::string& name,
                                  const std::vector<std::pair<std::string, std::string>>& settings);

}  // namespace vnet::control
