// The device-info file (k8snetworkplumbingwg device-info-spec 1.1.0) that
// tells Multus and KubeVirt where a vhost-user attachment's socket is.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vnet::cni {

// {"type": "vhost-user", "version": "1.1.0", "vhost-user": {"mode", "path"}};
// `mode` is the pod's side: "client" when vnetd listens, "server" when
// vnetd connects (docs/KUBERNETES.md "Device info").
nlohmann::json vhost_user_device_info(const std::string& socket_path, bool vnetd_is_client);

// Written by rename; throws CniError 5.
void write_device_info(const std::string& path, const nlohmann::json& info);

}  // namespace vnet::cni
