// The network configuration vnetd-cni reads on stdin (CNI SPEC 1.1 section
// 1), in userspace-cni-network-plugin's schema where the two overlap
// (docs/KUBERNETES.md "Configuration").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cni/cni_env.hpp"

namespace vnet::cni {

enum class IfType { vhostuser, tap };
// "vhostuser" / "tap", as host.iftype spells it.
inline const char* to_string(IfType t) {
    return t == IfType::tap ? "tap" : "vhostuser";
}

inline constexpr const char* kDefaultControlSocket = "/run/vnetd/vnetd.ctl";
inline constexpr const char* kDefaultStateDir = "/var/lib/cni/vnetd";
inline constexpr const char* kDefaultSocketDir = "/run/vnetd/cni";

struct NetConfig {
    std::string cni_version;
    std::string name;
    IfType iftype = IfType::tap;
    std::string control_socket = kDefaultControlSocket;
    std::string state_dir = kDefaultStateDir;
    std::string socket_dir = kDefaultSocketDir;  // vhostuser: <socketDir>/<pod>/<socketfile>
    std::string bridge;                          // host.bridge.bridgeName: the vnetd switch
    std::optional<unsigned> vlan;                // host.bridge.vlanId: its access VLAN
    std::optional<unsigned> mtu;
    bool vhost_client = false;     // host.vhost.mode "client": vnetd connects to the pod's socket
    std::string socketfile;        // host.vhost.socketfile; default: CNI_IFNAME
    nlohmann::json ipam;           // object with "type", or null: no IPAM
    nlohmann::json prev_result;    // null when first in the chain
    std::string device_info_file;  // runtimeConfig.CNIDeviceInfoFile
    // GC: cni.dev/valid-attachments as (container id, ifname).
    std::vector<std::pair<std::string, std::string>> valid_attachments;
    nlohmann::json raw;  // stdin as parsed, handed to IPAM
};

// Throws CniError: 6 not JSON, 1 a cniVersion vnetd-cni does not speak (or
// a verb the version lacks), 7 a key missing or wrong (the message names it).
NetConfig parse_net_config(const std::string& stdin_text, Verb verb);

// The version of a config that may be unreadable, for the error's own
// cniVersion: the config's if it has one, else the latest.
std::string version_of(const std::string& stdin_text);

}  // namespace vnet::cni
