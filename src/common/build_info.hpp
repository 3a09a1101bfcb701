// What this build is: the project's version and the commit it was built
// from ("unknown" outside git). --version on every binary and the
// vnetd_build_info metric say the same, from one generated header that
// only build_info.cpp includes, so a new commit recompiles one file.
#pragma once

#include <string>
#include <string_view>

namespace vnet::build_info {

std::string_view version();
std::string_view commit();

// What `PROGRAM --version` prints: "vnetd 0.1.0 (commit 7ca8a01)".
std::string version_line(std::string_view program);

}  // namespace vnet::build_info
