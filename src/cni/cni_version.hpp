// The CNI versions vnetd-cni speaks and how they compare.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vnet::cni {

// Oldest first; results are written in the version the config names.
inline constexpr std::array<std::string_view, 4> kSupportedVersions{"0.3.1", "0.4.0", "1.0.0",
                                                                    "1.1.0"};
inline constexpr std::string_view kLatestVersion = "1.1.0";

bool is_supported_version(std::string_view version);

// <0, 0, >0 as a is older, the same, newer than b ("0.4.0" < "1.0.0");
// a part that is not a number counts as 0.
int compare_versions(std::string_view a, std::string_view b);

// VERSION's answer: {"cniVersion", "supportedVersions"}.
nlohmann::json version_json();

}  // namespace vnet::cni
