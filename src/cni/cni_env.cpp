#include "cni/cni_env.hpp"

#include <cctype>
#include <utility>

#include "cni/cni_error.hpp"

namespace vnet::cni {

namespace {

struct VerbRule {
    const char* name;
    Verb verb;
    bool container_id;
    bool netns;
    bool ifname;
    bool path;
};

// CNI SPEC 1.1 section 2 "Parameters" and each verb's "Required environment
// parameters"; STATUS takes none but CNI_COMMAND here (it asks vnetd only).
constexpr VerbRule kVerbs[] = {
    {"ADD", Verb::add, true, true, true, false},
    {"DEL", Verb::del, true, false, true, false},
    {"CHECK", Verb::check, true, true, true, false},
    {"GC", Verb::gc, false, false, false, true},
    {"STATUS", Verb::status, false, false, false, false},
    {"VERSION", Verb::version, false, false, false, false},
};

std::vector<std::string> split_path(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t colon = s.find(':', start);
        const size_t end = colon == std::string::npos ? s.size() : colon;
        if (end > start) {
            out.push_back(s.substr(start, end - start));
        }
        if (colon == std::string::npos) {
            break;
        }
        start = colon + 1;
    }
    return out;
}

}  // namespace

bool valid_container_id(const std::string& id) {
    // SPEC "Container ID": alphanumeric first, then alphanumerics, '_', '.', '-'.
    if (id.empty() || std::isalnum(static_cast<unsigned char>(id[0])) == 0) {
        return false;
    }
    for (char c : id) {
        if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '.' && c != '-') {
            return false;
        }
    }
    return true;
}

std::string interface_name_problem(const std::string& name) {
    if (name.empty()) {
        return "interface name is empty";
    }
    if (name.size() > 15) {  // IFNAMSIZ less the NUL
        return "interface name is too long";
    }
    if (name == "." || name == "..") {
        return "interface name is . or ..";
    }
    for (char c : name) {
        if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) != 0) {
            return "interface name contains / or : or whitespace characters";
        }
    }
    return "";
}

CniEnv read_env(const EnvLookup& lookup) {
    CniEnv env;
    const auto get = [&](const char* name) { return lookup(name).value_or(""); };
    env.command = get("CNI_COMMAND");
    if (env.command.empty()) {
        throw CniError(ErrorCode::invalid_environment,
                       "required env variables [CNI_COMMAND] missing");
    }
    const VerbRule* rule = nullptr;
    for (const VerbRule& r : kVerbs) {
        if (env.command == r.name) {
            rule = &r;
        }
    }
    if (rule == nullptr) {
        throw CniError(ErrorCode::invalid_environment, "unknown CNI_COMMAND: " + env.command);
    }
    env.verb = rule->verb;
    env.container_id = get("CNI_CONTAINERID");
    env.netns = get("CNI_NETNS");
    env.ifname = get("CNI_IFNAME");
    env.args = get("CNI_ARGS");
    const std::string path = get("CNI_PATH");
    env.path = split_path(path);

    std::string missing;
    const auto require = [&](bool needed, const char* name, const std::string& value) {
        if (needed && value.empty()) {
            missing += (missing.empty() ? "" : ",") + std::string(name);
        }
    };
    require(rule->container_id, "CNI_CONTAINERID", env.container_id);
    require(rule->netns, "CNI_NETNS", env.netns);
    require(rule->ifname, "CNI_IFNAME", env.ifname);
    require(rule->path, "CNI_PATH", path);
    if (!missing.empty()) {
        throw CniError(ErrorCode::invalid_environment,
                       "required env variables [" + missing + "] missing");
    }
    if (rule->container_id && !valid_container_id(env.container_id)) {
        throw CniError(ErrorCode::invalid_environment, "invalid characters in containerID",
                       env.container_id);
    }
    if (rule->ifname) {
        if (std::string problem = interface_name_problem(env.ifname); !problem.empty()) {
            throw CniError(ErrorCode::invalid_environment, problem, env.ifname);
        }
    }
    return env;
}

}  // namespace vnet::cni
