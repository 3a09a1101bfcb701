// Reading a CLI11 tree the way its --help shows it: the options a user can
// see (hidden ones have no group), their spellings, their value's shape.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace vnet::cli_docs {

// The visible named options (--x, -x) of `app`, --help included.
std::vector<const CLI::Option*> visible_flags(const CLI::App& app);
// The positional arguments of `app`, in order.
std::vector<const CLI::Option*> positionals(const CLI::App& app);
// The visible subcommands of `app`, in the order they were added.
std::vector<const CLI::App*> visible_subcommands(const CLI::App& app);
// "--tx-batch, --batch": every spelling of a named option.
std::vector<std::string> spellings(const CLI::Option& option);
// Whether the option takes a value (a bare flag does not), and whether it
// may also be given bare (--watch, --napi: a default value).
bool takes_value(const CLI::Option& option);
bool value_optional(const CLI::Option& option);
// The value's shape as --help shows it ("N", "TEXT"), without CLI11's
// decorations (":FILE", "REQUIRED").
std::string value_name(const CLI::Option& option);

}  // namespace vnet::cli_docs
