// vnetd's man pages and bash completion, printed for the build by the
// hidden flag `vnetd --generate-doc KIND` (apps/CMakeLists.txt): written
// from the CLI11 tree main() builds and from the option table.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

namespace vnet::vnetd {

// KIND is "man" (vnetd.8), "config-man" (vnetd.toml.5) or
// "bash-completion". Returns the exit status (2 for an unknown KIND).
int print_generated_doc(std::string_view kind, const CLI::App& app);

// vnetd.toml(5): every key of the option table, by the table it goes in.
std::string config_man_page();

}  // namespace vnet::vnetd
