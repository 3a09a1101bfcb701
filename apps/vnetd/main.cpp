// vnetd: the vhost-user virtio-net back end daemon.
//
//   vnetd --socket-path PATH [--client] --tap NAME [options]   one VM <-> one tap
//   vnetd --tap A --tap B                                      tap <-> tap
//   vnetd --socket-path PATH --null                            VM -> discard
//   vnetd --config FILE                                        many ports (TOML)
//
// Follows QEMU's conventions for back-end programs
// (docs/interop/vhost-user.rst "Backend program conventions"): --socket-path,
// --print-capabilities, stays in the foreground, exits quickly on SIGTERM.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/log.hpp"
#include "control/config.hpp"
#include "control/daemon.hpp"

namespace {

vnet::control::Config config_from_flags(const std::string& socket_path, int listen_fd, bool client,
                                        const std::vector<std::string>& taps, bool null_port) {
    using vnet::control::PortConfig;
    using vnet::control::PortType;
    vnet::control::Config c;
    std::vector<std::string> names;
    if (!socket_path.empty() || listen_fd >= 0) {
        PortConfig vm;
        vm.name = "vm0";
        vm.type = PortType::vhost_user;
        vm.socket_path = socket_path;
        vm.listen_fd = listen_fd;
        vm.client = client;
        c.ports.push_back(vm);
        names.push_back(vm.name);
    }
    for (const std::string& tap : taps) {
        PortConfig t;
        t.name = tap;
        t.type = PortType::tap;
        t.ifname = tap;
        c.ports.push_back(t);
        names.push_back(t.name);
    }
    if (null_port) {
        PortConfig n;
        n.name = "null0";
        n.type = PortType::null;
        c.ports.push_back(n);
        names.push_back(n.name);
    }
    if (names.size() != 2) {
        throw std::invalid_argument(
            "give exactly two ports to cross-connect (--socket-path, --tap, --null), or --config");
    }
    c.connections.emplace_back(names[0], names[1]);
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"vnetd: user-space virtio-net data plane (vhost-user back end)"};
    std::string config_file, socket_path, log_level = "info", submit, mode, stats_file;
    std::string socket_owner, socket_group, socket_mode;
    std::vector<std::string> taps;
    std::string tap_xdp, tap_xdp_mode, tap_xdp_redirect;
    bool client = false, null_port = false, print_caps = false, persist = false, napi = false;
    bool napi_frags = false;
    std::string tx_peek, gro, gro_udp;
    int64_t rx_frames = -1, rx_usecs = -1;
    int tx_batch = -1, busy_poll_us = -1, stats_interval = -1;
    std::vector<int> cpus;
    int mtu = 0;
    int listen_fd = -1;
    int queue_pairs = -1;

    app.add_option("--config", config_file, "TOML file with ports, connections and options");
    app.add_option("--socket-path", socket_path, "vhost-user socket of the VM port");
    app.add_option("--fd", listen_fd,
                   "an inherited, listening vhost-user socket (instead of --socket-path)");
    app.add_flag("--client", client, "connect to a listening front end (reconnects forever)");
    app.add_option("--tap", taps, "tap device to open or create (twice for tap <-> tap)");
    app.add_option("--tap-xdp", tap_xdp,
                   "attach this XDP program to every --tap: FILE[:SECTION] (SECTION: a section "
                   "or program name; default: the first XDP program)");
    app.add_option("--tap-xdp-mode", tap_xdp_mode,
                   "auto (native, else generic; default), native or generic");
    app.add_option("--tap-xdp-redirect", tap_xdp_redirect,
                   "interface whose ifindex goes into the program's redirect_map[0]");
    app.add_flag("--null", null_port, "a discarding port (measures pure ring work)");
    app.add_flag("--persist", persist, "keep created taps after exit");
    app.add_flag("--napi", napi, "open taps with IFF_NAPI (off: loses pps with one-packet writes)");
    app.add_option("--mtu", mtu, "MTU offered to the guest and set on the tap");
    app.add_option("--queue-pairs", queue_pairs,
                   "queue pairs of every port: the most a VM may enable (default 8), the "
                   "queues of a tap (default: its VM peer's)");
    app.add_flag("--napi-frags", napi_frags, "open taps with IFF_NAPI|IFF_NAPI_FRAGS (test only)");
    app.add_option("--tx-batch", tx_batch,
                   "packets per burst from a TX ring (0..64; 0 = per-packet, default 64)");
    app.add_option("--tx-peek", tx_peek,
                   "on: hold a batch for one submission while the ring has more (default); "
                   "off: submit each packet as it is taken")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--gro", gro, "on: merge TCP segments of a TX batch into one GSO tap write")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--gro-udp", gro_udp, "on: also merge UDP datagrams into USO tap writes")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--rx-frames", rx_frames,
                   "guest RX coalescing: frames per used-index publish (0 = per batch)");
    app.add_option("--rx-usecs", rx_usecs,
                   "guest RX coalescing: publish at most this long after the first held frame");
    app.add_option("--submit", submit, "tap write submission: io_uring or writev");
    app.add_option("--mode", mode, "worker mode: event (sleep when idle) or poll (spin)");
    app.add_option("--busy-poll-us", busy_poll_us, "spin this long on idle rings before sleeping");
    app.add_option("--cpu", cpus, "pin a worker to this CPU (repeat for more workers)");
    app.add_option("--socket-owner", socket_owner, "owner (user name or uid) of the socket");
    app.add_option("--socket-group", socket_group, "group (name or gid) of the socket");
    app.add_option("--socket-mode", socket_mode, "permissions of the socket, octal (e.g. 0660)");
    app.add_option("--stats-interval", stats_interval,
                   "log stats every N seconds (0: at exit only)");
    app.add_option("--stats-file", stats_file,
                   "write stats as JSON here, every stats interval (1 s if none) and at exit");
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
    app.add_flag("--print-capabilities", print_caps,
                 "print the vhost-user capabilities (JSON) and exit");
    CLI11_PARSE(app, argc, argv);

    if (print_caps) {
        // vhost-user.rst: {"type": "net", "features": [...]} for a net back end.
        std::cout << nlohmann::json{{"type", "net"}, {"features", nlohmann::json::array()}}.dump()
                  << std::endl;
        return 0;
    }

    try {
        vnet::set_log_level(log_level);
        vnet::control::Config config =
            config_file.empty() ? config_from_flags(socket_path, listen_fd, client, taps, null_port)
                                : vnet::control::load_config_file(config_file);
        for (auto& p : config.ports) {
            p.persist |= persist;
            p.napi |= napi || napi_frags;
            p.napi_frags |= napi_frags;
            if (mtu > 0) {
                p.mtu = static_cast<uint16_t>(mtu);
            }
            if (queue_pairs >= 0) {
                // Out of range stays out of range: validate() names it.
                p.queue_pairs = static_cast<uint16_t>(std::clamp(queue_pairs, 0, 0xffff));
            }
            if (p.type == vnet::control::PortType::vhost_user) {
                if (!socket_owner.empty()) {
                    p.socket_owner = vnet::control::parse_socket_owner(socket_owner);
                }
                if (!socket_group.empty()) {
                    p.socket_group = vnet::control::parse_socket_group(socket_group);
                }
                if (!socket_mode.empty()) {
                    p.socket_mode = static_cast<mode_t>(std::stoul(socket_mode, nullptr, 8));
                }
            }
        }
        // Like --napi and --mtu, the XDP flags apply to every --tap port; a
        // config file names its programs per port instead.
        if (!tap_xdp.empty() || !tap_xdp_mode.empty() || !tap_xdp_redirect.empty()) {
            if (!config_file.empty()) {
                throw std::invalid_argument(
                    "--tap-xdp, --tap-xdp-mode and --tap-xdp-redirect apply to --tap ports; "
                    "with --config use the port keys xdp, xdp_mode and xdp_redirect");
            }
            for (auto& p : config.ports) {
                if (p.type == vnet::control::PortType::tap) {
                    p.xdp = tap_xdp;
                    p.xdp_mode = tap_xdp_mode.empty() ? p.xdp_mode : tap_xdp_mode;
                    p.xdp_redirect = tap_xdp_redirect;
                }
            }
        }
        if (tx_batch >= 0)
            config.datapath.tx_batch = static_cast<uint16_t>(std::min(tx_batch, 0xffff));
        if (!tx_peek.empty())
            config.datapath.tx_peek = tx_peek == "on";
        if (!gro.empty())
            config.datapath.gro = gro == "on";
        if (!gro_udp.empty())
            config.datapath.gro_udp = gro_udp == "on";
        if (rx_frames >= 0)
            config.datapath.rx_frames =
                static_cast<uint32_t>(std::min<int64_t>(rx_frames, 1 << 30));
        if (rx_usecs >= 0)
            config.datapath.rx_usecs = static_cast<uint32_t>(std::min<int64_t>(rx_usecs, 1 << 30));
        if (busy_poll_us >= 0)
            config.datapath.busy_poll_us = static_cast<uint32_t>(busy_poll_us);
        if (!cpus.empty())
            config.datapath.worker_cpus = cpus;
        if (!submit.empty()) {
            auto m = vnet::io::parse_batch_mode(submit);
            if (!m)
                throw std::invalid_argument("--submit must be io_uring or writev");
            config.datapath.submit = *m;
        }
        if (!mode.empty()) {
            config.datapath.mode = vnet::control::parse_worker_mode(mode);
        }
        if (stats_interval >= 0)
            config.stats_interval_s = static_cast<uint32_t>(stats_interval);
        if (!stats_file.empty())
            config.stats_file = stats_file;
        config.log_level = log_level;
        config.validate();

        vnet::control::Daemon daemon(std::move(config));
        return daemon.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vnetd: %s\n", e.what());
        return 1;
    }
}
