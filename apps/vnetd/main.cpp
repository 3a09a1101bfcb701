// vnetd: the vhost-user virtio-net back end daemon.
//
//   vnetd --socket-path PATH [--client] --tap NAME [options]   one VM <-> one tap
//   vnetd --tap A --tap B                                      tap <-> tap
//   vnetd --socket-path PATH --null                            VM -> discard
//   vnetd --config FILE                                        many ports (TOML)
//   vnetd [--control-socket PATH]                              empty; ports from vnetctl
//
// Follows QEMU's conventions for back-end programs
// (docs/interop/vhost-user.rst "Backend program conventions"): --socket-path,
// --print-capabilities, stays in the foreground, exits quickly on SIGTERM.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cli_docs/cli_docs.hpp"
#include "common/build_info.hpp"
#include "common/cli_exit.hpp"
#include "common/log.hpp"
#include "common/log_format.hpp"
#include "control/config/config.hpp"
#include "control/config/option_table.hpp"
#include "control/daemon.hpp"
#include "control/lifecycle/upgrade/handover_link.hpp"
#include "generated_docs.hpp"

namespace {

vnet::control::Config config_from_flags(const std::string& socket_path, int listen_fd, bool client,
                                        const std::vector<std::string>& taps, bool null_port) {
    using vnet::control::PortConfig;
    vnet::control::Config c;
    std::vector<std::string> names;
    if (!socket_path.empty() || listen_fd >= 0) {
        PortConfig vm;
        vm.name = "vm0";
        vnet::control::VhostUserSettings v;
        v.socket_path = socket_path;
        v.listen_fd = listen_fd;
        v.client = client;
        vm.settings = v;
        c.ports.push_back(vm);
        names.push_back(vm.name);
    }
    for (const std::string& tap : taps) {
        PortConfig t;
        t.name = tap;
        vnet::control::TapSettings ts;
        ts.ifname = tap;
        t.settings = ts;
        c.ports.push_back(t);
        names.push_back(t.name);
    }
    if (null_port) {
        PortConfig n;
        n.name = "null0";
        n.settings = vnet::control::NullSettings{};
        c.ports.push_back(n);
        names.push_back(n.name);
    }
    if (names.empty()) {
        return c;  // starts empty, like ovs-vswitchd: ports come from vnetctl
    }
    if (names.size() != 2) {
        throw std::invalid_argument(
            "give two ports to cross-connect (--socket-path, --tap, --null), --config FILE, or no "
            "port to start empty and add ports with vnetctl");
    }
    c.connections.emplace_back(names[0], names[1]);
    return c;
}

// Every option of the table is a flag (the key with dashes); the ones that
// build ports (--socket-path, --tap, ...) are registered by hand above it.
struct TableFlag {
    const vnet::control::OptionSpec* option;
    CLI::Option* cli;
    std::vector<std::string> values;
};

void add_table_flags(CLI::App& app, std::vector<TableFlag>& flags) {
    const auto table = vnet::control::option_table();
    flags.reserve(table.size());  // CLI11 keeps pointers to each `values`
    for (const vnet::control::OptionSpec& o : table) {
        if (o.identity || o.scope == vnet::control::OptionScope::switch_) {
            continue;  // switches exist only in a config file
        }
        std::string names = vnet::control::flag_of(o);
        if (!o.flag_alias.empty()) {
            names += "," + std::string(o.flag_alias);
        }
        TableFlag& f = flags.emplace_back(TableFlag{&o, nullptr, {}});
        f.cli = app.add_option(names, f.values, std::string(o.help));
        f.cli->type_name(std::string(o.value_name));
        if (vnet::control::is_boolean(o)) {
            f.cli->expected(0, 1);  // a bare --napi means on
        } else if (o.key != "worker_cpus") {
            f.cli->expected(1);  // given twice: the last one counts
            f.cli->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        }
    }
}

// The flags that were given, applied over the config (file or flags).
void apply_table_flags(vnet::control::Config& config, const std::vector<TableFlag>& flags,
                       bool from_file) {
    for (const TableFlag& f : flags) {
        if (f.cli->count() == 0) {
            continue;
        }
        if (from_file && f.option->key.starts_with("xdp")) {
            // The XDP flags name one program for the --tap ports; a config
            // file names its programs per port.
            throw std::invalid_argument(std::string(f.option->flag_alias) +
                                        " applies to --tap ports; with --config use the port key " +
                                        std::string(f.option->key));
        }
        std::string text;
        if (f.values.empty() || (vnet::control::is_boolean(*f.option) && f.values.back().empty())) {
            text = "on";  // a bare --persist (CLI11 may hand it over as one empty value)
        } else if (f.option->key == "worker_cpus") {
            for (const std::string& v : f.values) {
                if (!text.empty()) {
                    text += ',';  // two steps: g++ 12 -O3 warns falsely on "," + string
                }
                text += v;
            }
        } else {
            text = f.values.back();
        }
        vnet::control::apply_flag(config, *f.option, text);
    }
}

// vhost-user.rst "Backend program conventions": --print-capabilities prints
// the back end's @VHostUserBackendCapabilities (docs/interop/vhost-user.json)
// and exits 0, ignoring every other option and argument. The schema's union
// defines `features` only for some types (input, gpu, ...); a "net" back end
// has nothing but its type.
bool print_capabilities_requested(int argc, char** argv) {
    return std::any_of(argv + 1, argv + argc, [](const char* arg) {
        return std::string_view(arg) == "--print-capabilities";
    });
}

// Upgrade in place: a vnetd started by `vnetctl upgrade` that cannot start
// tells the one it was to replace why, which says so to vnetctl and keeps
// running. Its --takeover-fd is read from the flags as given, since the
// config that would carry it may be what failed.
void tell_predecessor_why(const std::vector<TableFlag>& flags, const std::string& reason) {
    for (const TableFlag& f : flags) {
        if (f.option->key != "takeover_fd" || f.values.empty()) {
            continue;
        }
        int fd = -1;
        try {
            fd = std::stoi(f.values.back());
        } catch (const std::exception&) {
            return;
        }
        vnet::control::upgrade::HandoverLink link{vnet::UniqueFd(fd)};
        link.send(vnet::control::upgrade::handover_failed(reason));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (print_capabilities_requested(argc, argv)) {
        std::cout << nlohmann::json{{"type", "net"}}.dump() << std::endl;
        return 0;
    }
    CLI::App app{"vnetd: user-space virtio-net data plane (vhost-user back end)"};
    app.set_version_flag("--version", vnet::build_info::version_line("vnetd"));
    std::string config_file, socket_path;
    std::vector<std::string> taps;
    bool client = false, null_port = false;
    int listen_fd = -1;

    auto* config_option =
        app.add_option("--config", config_file, "TOML file with ports, connections and options");
    // The flags that build the one-pair set-up: a config file names its own
    // ports, so together with --config they would be silently ignored.
    const std::vector<CLI::Option*> port_flags{
        app.add_option("--socket-path", socket_path, "vhost-user socket of the VM port"),
        app.add_option("--fd", listen_fd,
                       "serve an inherited listening socket (fd number) instead of --socket-path"),
        app.add_flag("--client", client, "connect to a listening front end (reconnects forever)"),
        app.add_option("--tap", taps, "tap device to open or create (twice for tap <-> tap)"),
        app.add_flag("--null", null_port, "a discarding port (measures pure ring work)"),
    };
    for (CLI::Option* flag : port_flags) {
        flag->excludes(config_option);
    }
    bool print_caps = false;  // handled before parsing; here for --help
    app.add_flag("--print-capabilities", print_caps,
                 "print the vhost-user back-end capabilities (JSON) and exit");
    std::vector<TableFlag> table_flags;
    add_table_flags(app, table_flags);
    if (const auto doc = vnet::cli_docs::requested_doc(argc, argv)) {
        return vnet::vnetd::print_generated_doc(*doc, app);  // the build's man pages
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return vnet::exit_status_of(app, e);
    }

    try {
        vnet::control::Config config =
            config_file.empty() ? config_from_flags(socket_path, listen_fd, client, taps, null_port)
                                : vnet::control::load_config_file(config_file);
        apply_table_flags(config, table_flags, !config_file.empty());
        if (config_file.empty() && config.ports.empty() && config.control_socket.empty()) {
            throw std::invalid_argument(
                "no ports and no control socket: nothing to do (give ports, --config FILE or "
                "--control-socket PATH)");
        }
        vnet::set_log_level(config.log_level);
        config.validate();

        std::function<vnet::control::Config()> reread;
        if (!config_file.empty()) {
            reread = [config_file, table_flags] {
                vnet::control::Config c = vnet::control::load_config_file(config_file);
                apply_table_flags(c, table_flags, true);
                c.validate();
                return c;
            };
        }
        vnet::control::Daemon daemon(std::move(config), std::move(reread));
        return daemon.run();
    } catch (const std::exception& e) {
        // An error at start-up under systemd: filed as one (sd-daemon "<3>").
        std::fprintf(stderr, "%svnetd: %s\n", vnet::stderr_is_journal() ? "<3>" : "", e.what());
        tell_predecessor_why(table_flags, e.what());
        return vnet::kExitFailure;
    }
}
