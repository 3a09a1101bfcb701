#include "cni/commands.hpp"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "cni/attachment_state.hpp"
#include "cni/cni_error.hpp"
#include "cni/cni_result.hpp"
#include "cni/cni_version.hpp"
#include "cni/delegate_plugin.hpp"
#include "cni/device_info.hpp"
#include "cni/pod_link.hpp"
#include "rpc_client/control_client.hpp"

namespace vnet::cni {

using nlohmann::json;

namespace {

constexpr size_t kSunPathMax = 107;  // sizeof(sockaddr_un::sun_path) less the NUL

// vnetd through its control socket; `when_down` is the code a verb reports
// when nobody answers, at connect or within the client's answer timeout (11
// for ADD/DEL/CHECK/GC: the runtime retries; 50 for STATUS).
class Vnetd {
public:
    Vnetd(const std::string& socket, ErrorCode when_down) try
        : client_(socket), when_down_(when_down) {
    } catch (const rpc_client::ControlError& e) {
        throw CniError(when_down, "vnetd's control socket does not answer", e.what());
    }

    json port(const std::string& name) {
        for (const json& p : call("port.list", json::object())) {
            if (p.value("name", std::string()) == name) {
                return p;
            }
        }
        return json();
    }
    bool has_port(const std::string& name) { return !port(name).is_null(); }
    void add_port(const json& params) { call("port.add", params); }
    // DEL is idempotent: a port vnetd no longer has (deleted, or vnetd restarted) is fine.
    void del_port_if_present(const std::string& name) {
        if (has_port(name)) {
            call("port.del", json{{"name", name}});
        }
    }
    json version() { return call("version", json::object()); }

private:
    json call(const std::string& method, const json& params) {
        try {
            return client_.call(method, params);
        } catch (const rpc_client::ControlTimeout& e) {
            throw CniError(when_down_, "vnetd's control socket does not answer", e.what());
        } catch (const rpc_client::ControlError& e) {
            throw CniError(ErrorCode::vnetd_refused, "vnetd refused " + method + ": " + e.what());
        }
    }

    rpc_client::ControlClient client_;
    ErrorCode when_down_;
};

json ipam_config(const json& raw, const json& ipam) {
    json out = raw;
    out["ipam"] = ipam;
    return out;
}

json run_ipam(const CniEnv& env, const json& raw, const json& ipam, const std::string& command,
              const std::map<std::string, std::string>& overrides = {}) {
    if (env.path.empty()) {
        throw CniError(ErrorCode::invalid_environment,
                       "required env variables [CNI_PATH] missing (ipam.type " +
                           ipam.value("type", std::string()) + " is looked up there)");
    }
    DelegateCall call;
    call.type = ipam.at("type").get<std::string>();
    call.search_path = env.path;
    call.env = overrides;
    call.env["CNI_COMMAND"] = command;
    call.config = config_for_delegate(call, ipam_config(raw, ipam));
    return run_delegate(call);
}

std::string pod_socket_dir(const NetConfig& c, const std::string& container_id) {
    // One directory per pod, named by the container id's first 12 characters
    // (as runtimes abbreviate it) so the path stays short for sun_path.
    return c.socket_dir + "/" + container_id.substr(0, 12);
}

json port_params(const NetConfig& c, const std::string& port, const char* type) {
    json p{{"name", port}, {"type", type}, {"switch", c.bridge}};
    if (c.vlan) {
        p["vlan"] = std::to_string(*c.vlan);
    }
    if (c.mtu) {
        p["mtu"] = std::to_string(*c.mtu);
    }
    return p;
}

void remove_vhost_files(const Attachment& a) {
    if (!a.socket_path.empty()) {
        std::error_code ec;
        std::filesystem::remove(a.socket_path, ec);
        std::filesystem::remove(std::filesystem::path(a.socket_path).parent_path(),
                                ec);  // if empty
    }
    if (!a.device_info_file.empty()) {
        std::error_code ec;
        std::filesystem::remove(a.device_info_file, ec);
    }
}

json cmd_add(const CniEnv& env, const NetConfig& c) {
    StateStore store(c.state_dir);
    Attachment a;
    a.container_id = env.container_id;
    a.ifname = env.ifname;
    a.network = c.name;
    a.iftype = to_string(c.iftype);
    a.port = port_name_for(env.container_id, env.ifname);
    a.netns = env.netns;
    a.ipam = c.ipam;
    if (c.iftype == IfType::tap && !netns_exists(env.netns)) {
        throw CniError(ErrorCode::invalid_environment,
                       "CNI_NETNS " + env.netns + " is not a network namespace");
    }
    if (c.iftype == IfType::vhostuser) {
        a.socket_path = pod_socket_dir(c, env.container_id) + "/" +
                        (c.socketfile.empty() ? env.ifname : c.socketfile);
        if (a.socket_path.size() > kSunPathMax) {
            throw CniError(ErrorCode::invalid_config,
                           "vhost-user socket path " + a.socket_path + " is " +
                               std::to_string(a.socket_path.size()) +
                               " bytes, more than sun_path's 107: shorten socketDir");
        }
    }
    json result = normalize_result(c.prev_result.is_null() ? json::object() : c.prev_result);
    Vnetd vnetd(c.control_socket, ErrorCode::try_again_later);  // before IPAM: nothing to undo

    bool ipam_done = false;
    bool port_added = false;
    try {
        json ipam_result = normalize_result(json::object());
        if (!c.ipam.is_null()) {
            ipam_result = normalize_result(run_ipam(env, c.raw, c.ipam, "ADD"));
            ipam_done = true;
        }
        json iface{{"name", env.ifname}, {"sandbox", env.netns}};
        if (c.iftype == IfType::vhostuser) {
            std::filesystem::create_directories(std::filesystem::path(a.socket_path).parent_path());
            json params = port_params(c, a.port, "vhost-user");
            params["socket_path"] = a.socket_path;
            if (c.vhost_client) {
                params["client"] = "on";
            }
            vnetd.add_port(params);
            port_added = true;
            iface["socketPath"] = a.socket_path;
            if (!c.device_info_file.empty()) {
                write_device_info(c.device_info_file,
                                  vhost_user_device_info(a.socket_path, c.vhost_client));
                a.device_info_file = c.device_info_file;
            }
        } else {
            vnetd.add_port(port_params(c, a.port, "tap"));
            port_added = true;
            iface["mac"] = move_link_into_pod(a.port, env.netns, env.ifname, c.mtu.value_or(0));
        }
        const size_t index = add_interface(result, iface);
        for (json ip : ipam_result["ips"]) {
            ip["interface"] = index;
            result["ips"].push_back(ip);
        }
        for (const json& r : ipam_result["routes"]) {
            result["routes"].push_back(r);
        }
        if (ipam_result.contains("dns")) {
            result["dns"] = ipam_result["dns"];
        }
        if (c.iftype == IfType::tap) {
            json ours = ipam_result;
            for (json& ip : ours["ips"]) {
                ip["interface"] = index;
            }
            address_pod_link(env.netns, env.ifname, ours, index);
        }
        a.result = result;
        store.save(a);
    } catch (...) {
        // Undo in reverse; each step best effort, the first error is the one reported.
        if (port_added) {
            try {
                vnetd.del_port_if_present(a.port);
            } catch (const CniError&) {
            }
        }
        remove_vhost_files(a);
        if (ipam_done) {
            try {
                run_ipam(env, c.raw, c.ipam, "DEL");
            } catch (const CniError&) {
            }
        }
        throw;
    }
    return result_for_version(result, c.cni_version);
}

// Releases one attachment: its port, its files, its addresses, its record.
void release(const CniEnv& env, const NetConfig& c, Vnetd& vnetd, const Attachment& a,
             const std::map<std::string, std::string>& ipam_env) {
    vnetd.del_port_if_present(a.port);
    if (a.iftype == "tap") {
        remove_pod_tap(a.netns, a.ifname);
    }
    remove_vhost_files(a);
    if (!a.ipam.is_null()) {
        run_ipam(env, c.raw, a.ipam, "DEL", ipam_env);
    }
    StateStore(c.state_dir).remove(a.container_id, a.ifname);
}

json cmd_del(const CniEnv& env, const NetConfig& c) {
    StateStore store(c.state_dir);
    // Without a record (ADD failed, or DEL ran already) the names are derived
    // again and whatever is left goes: DEL must succeed on nothing.
    Attachment a = store.load(env.container_id, env.ifname).value_or(Attachment{});
    if (a.port.empty()) {
        a.container_id = env.container_id;
        a.ifname = env.ifname;
        a.port = port_name_for(env.container_id, env.ifname);
        a.iftype = to_string(c.iftype);
        a.netns = env.netns;
    }
    if (!c.ipam.is_null()) {
        a.ipam = c.ipam;
    }
    Vnetd vnetd(c.control_socket, ErrorCode::try_again_later);
    release(env, c, vnetd, a, {});
    return json();
}

json cmd_check(const CniEnv& env, const NetConfig& c) {
    if (c.prev_result.is_null()) {
        throw CniError(ErrorCode::invalid_config,
                       "prevResult is missing (CHECK needs ADD's result)");
    }
    const json prev = normalize_result(c.prev_result);
    auto a = StateStore(c.state_dir).load(env.container_id, env.ifname);
    if (!a) {
        throw CniError(ErrorCode::unknown_container,
                       "no attachment of container " + env.container_id + " as " + env.ifname);
    }
    size_t index = prev["interfaces"].size();
    for (size_t i = 0; i < prev["interfaces"].size(); ++i) {
        const json& iface = prev["interfaces"][i];
        if (iface.value("name", std::string()) == env.ifname &&
            iface.value("sandbox", std::string()) == env.netns) {
            index = i;
        }
    }
    if (index == prev["interfaces"].size()) {
        throw CniError(ErrorCode::attachment_broken,
                       "prevResult has no interface " + env.ifname + " in " + env.netns);
    }
    Vnetd vnetd(c.control_socket, ErrorCode::try_again_later);
    const json port = vnetd.port(a->port);
    if (port.is_null()) {
        throw CniError(ErrorCode::attachment_broken, "vnetd has no port " + a->port);
    }
    if (a->iftype == "vhostuser") {
        if (port.value("socket_path", std::string()) != a->socket_path) {
            throw CniError(ErrorCode::attachment_broken,
                           "vnetd's port " + a->port + " is not on socket " + a->socket_path);
        }
    } else if (std::string problem = pod_link_problem(env.netns, env.ifname, prev, index);
               !problem.empty()) {
        throw CniError(ErrorCode::attachment_broken, problem);
    }
    if (!c.ipam.is_null()) {
        run_ipam(env, c.raw, c.ipam, "CHECK");
    }
    return json();
}

json cmd_gc(const CniEnv& env, const NetConfig& c) {
    std::set<std::pair<std::string, std::string>> valid(c.valid_attachments.begin(),
                                                        c.valid_attachments.end());
    Vnetd vnetd(c.control_socket, ErrorCode::try_again_later);
    for (const Attachment& a : StateStore(c.state_dir).list()) {
        if (a.network != c.name || valid.count({a.container_id, a.ifname}) != 0) {
            continue;
        }
        // The stale attachment's own variables for its IPAM's DEL.
        release(env, c, vnetd, a,
                {{"CNI_CONTAINERID", a.container_id}, {"CNI_IFNAME", a.ifname}, {"CNI_NETNS", ""}});
    }
    return json();
}

json cmd_status(const NetConfig& c) {
    Vnetd vnetd(c.control_socket, ErrorCode::plugin_not_available);
    try {
        vnetd.version();
    } catch (const CniError& e) {
        throw CniError(ErrorCode::plugin_not_available, "vnetd's control socket does not answer",
                       e.what());
    }
    return json();
}

}  // namespace

json run_command(const CniEnv& env, const NetConfig& config) {
    switch (env.verb) {
        case Verb::add:
            return cmd_add(env, config);
        case Verb::del:
            return cmd_del(env, config);
        case Verb::check:
            return cmd_check(env, config);
        case Verb::gc:
            return cmd_gc(env, config);
        case Verb::status:
            return cmd_status(config);
        case Verb::version:
            return version_json();
    }
    return json();
}

}  // namespace vnet::cni
