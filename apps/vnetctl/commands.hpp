// vnetctl's subcommands as a table: each row says where the subcommand
// sits on the command line ("switch uplink add"), its help, and makes the
// Command that declares its arguments and runs it (one JSON-RPC call, or
// two). main() builds CLI11's tree from the rows and runs the one chosen;
// a new subcommand is one class and one row in commands.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rpc_client/control_client.hpp"

namespace vnet::vnetctl {

// What a subcommand runs with: the client on vnetd's socket, and whether
// to print vnetd's JSON as it came (--json) instead of a table.
struct Session {
    rpc_client::ControlClient& client;
    bool as_json;
};

class Command {
public:
    virtual ~Command() = default;
    // Adds its arguments and options to `app`, its CLI11 subcommand; the
    // parsed values land in the command's members.
    virtual void declare(CLI::App& app) = 0;
    // The words CLI11 did not take (after its positionals): a command that
    // reads them (port add's keys, which are vnetd's) keeps them and says
    // true; the rest refuse them as CLI11 would.
    virtual bool take_extra_words(std::vector<std::string> /*words*/) { return false; }
    // Once parsed: does it and returns the exit status.
    virtual int run(Session& session) = 0;
};

struct CommandRow {
    std::string_view path;  // the group words, then its own name
    std::string_view help;
    std::unique_ptr<Command> (*make)();
};

// A word that only groups subcommands ("port", "switch uplink"): one of
// them must follow it.
struct GroupRow {
    std::string_view path;
    std::string_view help;
};

// In the order --help lists them.
std::span<const CommandRow> command_rows();
std::span<const GroupRow> group_rows();

}  // namespace vnet::vnetctl
