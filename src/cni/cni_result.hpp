// CNI results (SPEC 1.1 section 5 "Success"): kept in 1.1's shape inside
// vnetd-cni, read from any supported version (IPAM's answer, a prevResult)
// and written in the version the config asked for.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vnet::cni {

// A 0.3.x/0.4.0/1.x result in 1.1's shape: ips[] without "version", every
// list present. Throws CniError 6 when it is not a result (0.2.0's ip4/ip6
// included: vnetd-cni does not speak it).
nlohmann::json normalize_result(const nlohmann::json& any);

// The result as `version` spells it: "version": "4"/"6" on ips before 1.0.0,
// no interfaces[].socketPath before 1.1.0 (it is new in 1.1).
nlohmann::json result_for_version(const nlohmann::json& normalized, const std::string& version);

// Appends `iface` to interfaces[], points every ip without an interface at
// it, and returns its index.
size_t add_interface(nlohmann::json& normalized, const nlohmann::json& iface);

}  // namespace vnet::cni
