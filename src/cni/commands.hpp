// The CNI verbs, each over vnetd's control socket and the attachment state
// (docs/KUBERNETES.md "What the plugin does").
#pragma once

#include <nlohmann/json.hpp>

#include "cni/cni_env.hpp"
#include "cni/net_config.hpp"

namespace vnet::cni {

// What the verb prints on stdout: a result (ADD), VERSION's answer, or null
// for the verbs that print nothing on success. Throws CniError.
nlohmann::json run_command(const CniEnv& env, const NetConfig& config);

}  // namespace vnet::cni
