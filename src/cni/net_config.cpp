#include "cni/net_config.hpp"

#include "cni/cni_error.hpp"
#include "cni/cni_version.hpp"

namespace vnet::cni {

using nlohmann::json;

namespace {

[[noreturn]] void invalid(const std::string& msg) {
    throw CniError(ErrorCode::invalid_config, msg);
}

const json* object_at(const json& parent, const char* key, const std::string& where) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
        return nullptr;
    }
    if (!it->is_object()) {
        invalid(where + key + " must be an object");
    }
    return &*it;
}

std::string string_at(const json& parent, const char* key, const std::string& where,
                      const std::string& fallback) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
        return fallback;
    }
    if (!it->is_string()) {
        invalid(where + key + " must be a string");
    }
    return it->get<std::string>();
}

std::optional<unsigned> unsigned_at(const json& parent, const char* key, const std::string& where,
                                    unsigned lo, unsigned hi) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
        invalid(where + key + " must be an integer from " + std::to_string(lo) + " to " +
                std::to_string(hi));
    }
    return it->get<unsigned>();
}

void check_version(NetConfig& c, const json& j, Verb verb) {
    c.cni_version = string_at(j, "cniVersion", "", "");
    if (c.cni_version.empty()) {
        invalid("cniVersion is missing");
    }
    if (!is_supported_version(c.cni_version)) {
        throw CniError(ErrorCode::incompatible_version,
                       "incompatible CNI versions: config is \"" + c.cni_version +
                           "\", plugin supports " + version_json()["supportedVersions"].dump());
    }
    // CHECK came with 0.4.0, GC and STATUS with 1.1.0.
    const char* since = verb == Verb::check                          ? "0.4.0"
                        : (verb == Verb::gc || verb == Verb::status) ? "1.1.0"
                                                                     : nullptr;
    if (since != nullptr && compare_versions(c.cni_version, since) < 0) {
        throw CniError(ErrorCode::incompatible_version, "config version " + c.cni_version +
                                                            " does not allow " +
                                                            (verb == Verb::check ? "CHECK"
                                                             : verb == Verb::gc  ? "GC"
                                                                                 : "STATUS"));
    }
}

void read_host(NetConfig& c, const json& host) {
    const std::string iftype = string_at(host, "iftype", "host.", "");
    if (iftype == "vhostuser") {
        c.iftype = IfType::vhostuser;
    } else if (iftype == "tap") {
        c.iftype = IfType::tap;
    } else if (iftype.empty()) {
        invalid("host.iftype is missing (vhostuser or tap)");
    } else {
        invalid("unknown host.iftype '" + iftype + "' (vhostuser or tap)");
    }
    const json* bridge = object_at(host, "bridge", "host.");
    c.bridge = bridge ? string_at(*bridge, "bridgeName", "host.bridge.", "") : "";
    if (c.bridge.empty()) {
        invalid("host.bridge.bridgeName (the vnetd switch) is missing");
    }
    c.vlan = unsigned_at(*bridge, "vlanId", "host.bridge.", 1, 4094);
    if (const json* vhost = object_at(host, "vhost", "host.")) {
        const std::string mode = string_at(*vhost, "mode", "host.vhost.", "server");
        if (mode != "server" && mode != "client") {
            invalid("host.vhost.mode must be client or server, not '" + mode + "'");
        }
        c.vhost_client = mode == "client";
        c.socketfile = string_at(*vhost, "socketfile", "host.vhost.", "");
        if (c.socketfile.find('/') != std::string::npos || c.socketfile == "." ||
            c.socketfile == "..") {
            invalid("host.vhost.socketfile must be a file name, not '" + c.socketfile + "'");
        }
    }
}

}  // namespace

std::string version_of(const std::string& stdin_text) {
    const json j = json::parse(stdin_text, nullptr, false);
    if (j.is_object() && j.contains("cniVersion") && j["cniVersion"].is_string()) {
        return j["cniVersion"].get<std::string>();
    }
    return std::string(kLatestVersion);
}

NetConfig parse_net_config(const std::string& stdin_text, Verb verb) {
    NetConfig c;
    try {
        c.raw = json::parse(stdin_text);
    } catch (const json::parse_error& e) {
        throw CniError(ErrorCode::decode_failure,
                       std::string("failed to decode the network configuration: ") + e.what());
    }
    if (!c.raw.is_object()) {
        throw CniError(ErrorCode::decode_failure,
                       "failed to decode the network configuration: not a JSON object");
    }
    const json& j = c.raw;
    check_version(c, j, verb);
    c.name = string_at(j, "name", "", "");
    if (c.name.empty()) {
        invalid("name is missing");
    }
    const std::string type = string_at(j, "type", "", "");
    const json* host = object_at(j, "host", "");
    const std::string engine = host ? string_at(*host, "engine", "host.", "") : "";
    if (type == "userspace" ? engine != "vnetd" : type != "vnetd-cni") {
        invalid("type must be vnetd-cni (or userspace with host.engine vnetd), not '" + type +
                (type == "userspace" ? "' with host.engine '" + engine + "'" : "'"));
    }
    c.control_socket = string_at(j, "controlSocket", "", kDefaultControlSocket);
    c.state_dir = string_at(j, "stateDir", "", kDefaultStateDir);
    c.socket_dir = string_at(j, "socketDir", "", kDefaultSocketDir);
    c.mtu = unsigned_at(j, "mtu", "", 68, 65535);
    if (const json* ipam = object_at(j, "ipam", "")) {
        if (string_at(*ipam, "type", "ipam.", "").empty()) {
            invalid("ipam.type is missing");
        }
        c.ipam = *ipam;
    }
    if (auto prev = j.find("prevResult"); prev != j.end() && !prev->is_null()) {
        c.prev_result = *prev;
    }
    if (const json* rc = object_at(j, "runtimeConfig", "")) {
        c.device_info_file = string_at(*rc, "CNIDeviceInfoFile", "runtimeConfig.", "");
    }
    // STATUS, GC and VERSION act on the network, not on one attachment: no host section needed.
    if (verb == Verb::add || verb == Verb::del || verb == Verb::check) {
        if (host == nullptr) {
            invalid("host is missing (host.iftype, host.bridge.bridgeName)");
        }
        read_host(c, *host);
    }
    if (verb == Verb::gc) {
        auto va = j.find("cni.dev/valid-attachments");
        if (va != j.end() && !va->is_null()) {
            if (!va->is_array()) {
                invalid("cni.dev/valid-attachments must be a list");
            }
            for (const json& a : *va) {
                if (!a.is_object()) {
                    invalid("cni.dev/valid-attachments entries must be objects");
                }
                c.valid_attachments.emplace_back(
                    string_at(a, "containerID", "cni.dev/valid-attachments[].", ""),
                    string_at(a, "ifname", "cni.dev/valid-attachments[].", ""));
            }
        }
    }
    return c;
}

}  // namespace vnet::cni
