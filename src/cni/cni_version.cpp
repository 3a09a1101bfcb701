#include "cni/cni_version.hpp"

#include <algorithm>
#include <charconv>

#include "cni/cni_error.hpp"

namespace vnet::cni {

namespace {

std::array<int, 3> parts_of(std::string_view v) {
    std::array<int, 3> out{0, 0, 0};
    for (int& part : out) {
        const size_t dot = v.find('.');
        const std::string_view piece = v.substr(0, dot);
        std::from_chars(piece.data(), piece.data() + piece.size(), part);
        if (dot == std::string_view::npos) {
            break;
        }
        v.remove_prefix(dot + 1);
    }
    return out;
}

}  // namespace

bool is_supported_version(std::string_view version) {
    return std::find(kSupportedVersions.begin(), kSupportedVersions.end(), version) !=
           kSupportedVersions.end();
}

int compare_versions(std::string_view a, std::string_view b) {
    const auto pa = parts_of(a);
    const auto pb = parts_of(b);
    return pa < pb ? -1 : (pa == pb ? 0 : 1);
}

nlohmann::json version_json() {
    nlohmann::json versions = nlohmann::json::array();
    for (std::string_view v : kSupportedVersions) {
        versions.push_back(std::string(v));
    }
    return {{"cniVersion", std::string(kLatestVersion)}, {"supportedVersions", versions}};
}

nlohmann::json error_json(const CniError& e, const std::string& cni_version) {
    nlohmann::json out{
        {"cniVersion", cni_version.empty() ? std::string(kLatestVersion) : cni_version},
        {"code", static_cast<int>(e.code)},
        {"msg", e.what()}};
    if (!e.details.empty()) {
        out["details"] = e.details;
    }
    return out;
}

}  // namespace vnet::cni
