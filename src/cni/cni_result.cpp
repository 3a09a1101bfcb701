#include "cni/cni_result.hpp"

#include "cni/cni_error.hpp"
#include "cni/cni_version.hpp"

namespace vnet::cni {

using nlohmann::json;

namespace {

json list_of(const json& any, const char* key) {
    auto it = any.find(key);
    if (it == any.end() || it->is_null()) {
        return json::array();
    }
    if (!it->is_array()) {
        throw CniError(ErrorCode::decode_failure,
                       std::string("failed to decode the result: ") + key + " is not a list");
    }
    return *it;
}

}  // namespace

json normalize_result(const json& any) {
    if (!any.is_object()) {
        throw CniError(ErrorCode::decode_failure, "failed to decode the result: not an object");
    }
    if (any.contains("ip4") || any.contains("ip6")) {
        throw CniError(ErrorCode::incompatible_version,
                       "a 0.2.0 result (ip4/ip6) is not supported; use cniVersion 0.3.1 or later");
    }
    json out = json::object();
    out["cniVersion"] = any.value("cniVersion", std::string(kLatestVersion));
    out["interfaces"] = list_of(any, "interfaces");
    out["ips"] = json::array();
    for (json ip : list_of(any, "ips")) {
        if (!ip.is_object() || !ip.contains("address") || !ip["address"].is_string()) {
            throw CniError(ErrorCode::decode_failure,
                           "failed to decode the result: an ips[] entry has no address");
        }
        ip.erase("version");
        out["ips"].push_back(std::move(ip));
    }
    out["routes"] = list_of(any, "routes");
    if (auto dns = any.find("dns"); dns != any.end() && dns->is_object()) {
        out["dns"] = *dns;
    }
    return out;
}

json result_for_version(const json& normalized, const std::string& version) {
    json out = normalized;
    out["cniVersion"] = version;
    if (compare_versions(version, "1.1.0") < 0) {
        for (json& iface : out["interfaces"]) {
            iface.erase("socketPath");
            iface.erase("pciID");
        }
    }
    if (compare_versions(version, "1.0.0") < 0) {
        for (json& ip : out["ips"]) {
            const std::string address = ip.value("address", std::string());
            ip["version"] = address.find(':') == std::string::npos ? "4" : "6";
        }
    }
    if (out["interfaces"].empty()) {
        out.erase("interfaces");
    }
    if (out["routes"].empty()) {
        out.erase("routes");
    }
    return out;
}

size_t add_interface(json& normalized, const json& iface) {
    normalized["interfaces"].push_back(iface);
    const size_t index = normalized["interfaces"].size() - 1;
    for (json& ip : normalized["ips"]) {
        if (!ip.contains("interface")) {
            ip["interface"] = index;
        }
    }
    return index;
}

}  // namespace vnet::cni
