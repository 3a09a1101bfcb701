// The CNI_* environment of one plugin call, checked as CNI SPEC 1.1
// "Parameters" requires for the verb (code 4, the names of what is missing).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vnet::cni {

enum class Verb { add, del, check, gc, status, version };

struct CniEnv {
    Verb verb = Verb::version;
    std::string command;            // CNI_COMMAND as given
    std::string container_id;       // CNI_CONTAINERID
    std::string netns;              // CNI_NETNS (a path)
    std::string ifname;             // CNI_IFNAME
    std::string args;               // CNI_ARGS, passed on to IPAM untouched
    std::vector<std::string> path;  // CNI_PATH, split on ':'
};

// Reads one variable; nullopt when unset. Tests hand a map, main() getenv.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Throws CniError: 4 "required env variables [A,B] missing", 4 "unknown
// CNI_COMMAND: X", 4 "invalid characters in containerID", 4 the interface
// name rules of CNI's ValidateInterfaceName.
CniEnv read_env(const EnvLookup& lookup);

// The checks read_env applies, for names from elsewhere (GC's attachments).
bool valid_container_id(const std::string& id);
// Empty when fine, else why not (Linux IFNAMSIZ and dev_valid_name()).
std::string interface_name_problem(const std::string& name);

}  // namespace vnet::cni
