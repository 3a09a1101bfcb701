// vnetctl: drives a running vnetd through its control socket. Every command
// is one JSON-RPC call (docs/USAGE.md "The control socket"); output is a
// table, or vnetd's JSON as it came with --json. The subcommands are the
// rows of commands.cpp; this builds the command line from them.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli_docs/cli_docs.hpp"
#include "commands.hpp"
#include "common/build_info.hpp"
#include "common/cli_exit.hpp"
#include "generated_docs.hpp"
#include "rpc_client/control_client.hpp"

namespace {

using vnet::vnetctl::Command;

constexpr const char* kDefaultSocket = "/run/vnetd/vnetd.ctl";

// The CLI11 app of the group `path` ("switch uplink"), made on first use.
CLI::App* group_app(CLI::App& app, std::map<std::string, CLI::App*>& groups,
                    std::string_view path) {
    if (path.empty()) {
        return &app;
    }
    if (auto it = groups.find(std::string(path)); it != groups.end()) {
        return it->second;
    }
    const size_t space = path.rfind(' ');
    CLI::App* parent =
        group_app(app, groups, space == std::string_view::npos ? "" : path.substr(0, space));
    std::string help;
    for (const vnet::vnetctl::GroupRow& g : vnet::vnetctl::group_rows()) {
        if (g.path == path) {
            help = g.help;
        }
    }
    CLI::App* group =
        parent->add_subcommand(std::string(path.substr(space + 1)), help)->require_subcommand(1);
    groups[std::string(path)] = group;
    return group;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"vnetctl: drives a running vnetd through its control socket"};
    app.require_subcommand(1);
    app.set_version_flag("--version", vnet::build_info::version_line("vnetctl"));
    // The options before the subcommand may come after it too
    // (`vnetctl port list --json`): a subcommand hands up what it does not take.
    app.fallthrough();
    // Words no option takes reach the root (fallthrough); the chosen
    // subcommand gets them, and refuses them unless it reads them itself.
    app.allow_extras();
    std::string socket = kDefaultSocket;
    bool as_json = false;
    app.add_option("--socket", socket, "vnetd's control socket")->capture_default_str();
    unsigned timeout_s = vnet::rpc_client::kDefaultAnswerTimeout.count();
    app.add_option("--timeout", timeout_s,
                   "give up when vnetd does not answer for SECONDS (0: wait)")
        ->capture_default_str();
    app.add_flag("--json", as_json, "print vnetd's JSON answer instead of a table");

    std::map<std::string, CLI::App*> groups;
    std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> commands;
    for (const vnet::vnetctl::CommandRow& row : vnet::vnetctl::command_rows()) {
        const size_t space = row.path.rfind(' ');
        CLI::App* parent = group_app(
            app, groups, space == std::string_view::npos ? "" : row.path.substr(0, space));
        CLI::App* sub =
            parent->add_subcommand(std::string(row.path.substr(space + 1)), std::string(row.help));
        commands.emplace_back(sub, row.make());
        commands.back().second->declare(*sub);
    }
    if (const auto doc = vnet::cli_docs::requested_doc(argc, argv)) {
        return vnet::vnetctl::print_generated_doc(*doc, app);  // the build's man page
    }
    try {
        app.parse(argc, argv);
        if (!app.remaining().empty()) {
            for (auto& [sub, command] : commands) {
                if (*sub && !command->take_extra_words(app.remaining())) {
                    throw CLI::ExtrasError(app.remaining());
                }
            }
        }
    } catch (const CLI::ParseError& e) {
        return vnet::exit_status_of(app, e);
    }

    try {
        vnet::rpc_client::ControlClient client(socket, std::chrono::seconds(timeout_s));
        vnet::vnetctl::Session session{client, as_json};
        for (auto& [sub, command] : commands) {
            if (*sub) {
                return command->run(session);
            }
        }
    } catch (const vnet::rpc_client::ControlError& e) {
        std::cerr << "vnetctl: " << e.what() << "\n";
        return vnet::kExitFailure;
    }
    return 0;
}
