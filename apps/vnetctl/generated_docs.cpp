#include "generated_docs.hpp"

#include <iostream>

#include "cli_docs/cli_docs.hpp"

namespace vnet::vnetctl {
namespace {

constexpr std::string_view kDescription =
    R"(vnetctl drives a running vnetd(8) through its control socket: each command is one JSON-RPC
call (or two), and prints vnetd's answer as a table, or as vnetd's JSON with --json. Ports,
switches and uplinks added here live until vnetd stops; the configuration file
(vnetd.toml(5)) is what a restart starts with.

vnetctl exits with 1 when vnetd refused what was asked or could not be reached (the reason is
on standard error).)";

constexpr std::string_view kFiles = R"(/run/vnetd/vnetd.ctl
vnetd's control socket, unless --socket names another.)";

}  // namespace

int print_generated_doc(std::string_view kind, const CLI::App& app) {
    if (kind == "man") {
        std::cout << cli_docs::man_page(
            app, cli_docs::ManPageText{"vnetctl", 8, "control a running vnetd", kDescription,
                                       kFiles, "vnetd(8), vnetd.toml(5)"});
        return 0;
    }
    if (kind == "bash-completion") {
        std::cout << cli_docs::bash_completion(app, "vnetctl");
        return 0;
    }
    std::cerr << "vnetctl: --generate-doc takes man or bash-completion\n";
    return 2;
}

}  // namespace vnet::vnetctl
