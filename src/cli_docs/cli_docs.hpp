// A program's man page and bash completion, written from its CLI11 tree:
// the options and subcommands --help lists are the ones the page documents
// and the completion offers, so neither can fall behind the command line.
// The build runs each program with the hidden flag `--generate-doc KIND`
// (apps/CMakeLists.txt) and installs what it prints.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vnet::cli_docs {

// KIND when argv is exactly `PROGRAM --generate-doc KIND`; the flag is
// handled before parsing, like --print-capabilities, so it shows in no help.
std::optional<std::string> requested_doc(int argc, char** argv);

// What a man page says besides the options and commands: roff text, as
// paragraphs (blank lines between them become .PP).
struct ManPageText {
    std::string_view name;     // "vnetctl"
    int section = 8;           // 8: a daemon or an administrator's tool
    std::string_view summary;  // the NAME line after "name \-"
    std::string_view description;
    std::string_view files;     // empty: no FILES section
    std::string_view see_also;  // "vnetd(8), vnetd.toml(5)"
};

std::string man_page(const CLI::App& app, const ManPageText& text);

// A bash completion script for `program`: its options, and for a program
// with subcommands the subcommand words at each level and the options of
// the subcommand typed so far; FILE and PATH values complete as file names.
std::string bash_completion(const CLI::App& app, std::string_view program);

// Roff: escapes the text of one line (backslashes, dashes, a leading dot).
std::string roff_escape(std::string_view text);
// The .TH line and NAME section every page starts with.
std::string roff_header(std::string_view name, int section, std::string_view summary);
// Plain text as roff paragraphs: each line escaped, blank lines become .PP.
std::string roff_paragraphs(std::string_view text);

}  // namespace vnet::cli_docs
