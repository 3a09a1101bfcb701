// Runs another CNI plugin the standard way (SPEC 1.1 "Delegated plugins"):
// found by type on CNI_PATH, given the same environment (CNI_COMMAND and
// the attachment's variables may be overridden) and the config on stdin;
// its stdout is its result or its error.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vnet::cni {

struct DelegateCall {
    std::string type;                        // the plugin's file name, e.g. host-local
    std::vector<std::string> search_path;    // CNI_PATH
    std::map<std::string, std::string> env;  // set over the inherited environment
    nlohmann::json config;                   // written on its stdin
};

// Throws CniError: 7 no such plugin on CNI_PATH (the message names the
// directories), 5 fork/exec/pipe failures, the plugin's own error (its code
// and msg) when it exits non-zero, 6 when its output is not JSON.
// Returns its stdout parsed (null for an empty output, as DEL's).
nlohmann::json run_delegate(const DelegateCall& call);

// The config for a delegate in the newest version both speak: the
// delegate's VERSION answer is asked once; older plugins (Debian 12's
// host-local speaks up to 1.0.0) are given the best version they know.
nlohmann::json config_for_delegate(const DelegateCall& version_call, const nlohmann::json& config);

}  // namespace vnet::cni
