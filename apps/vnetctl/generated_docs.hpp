// vnetctl's man page and bash completion, printed for the build by the
// hidden flag `vnetctl --generate-doc KIND` (apps/CMakeLists.txt): written
// from the CLI11 tree main() builds from the command table, so a new
// subcommand is documented and completed with no other edit.
#pragma once

#include <CLI/CLI.hpp>
#include <string_view>

namespace vnet::vnetctl {

// KIND is "man" (vnetctl.8) or "bash-completion". Returns the exit status
// (2 for an unknown KIND).
int print_generated_doc(std::string_view kind, const CLI::App& app);

}  // namespace vnet::vnetctl
