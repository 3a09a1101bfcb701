#include "generated_docs.hpp"

#include <iostream>

#include "cli_docs/cli_docs.hpp"

namespace vnet::vnetd {
namespace {

constexpr std::string_view kDescription =
    R"(vnetd is a vhost-user virtio-net back end: QEMU, libvirt or DPDK's virtio-user hands it a
virtual machine's virtio-net rings over a UNIX socket, and vnetd moves the packets between
them, tap devices, VXLAN uplinks and its own L2 switches in user space.

Started with --config, vnetd takes its ports, cross-connects, switches and options from a TOML
file (vnetd.toml(5)) and rereads it on SIGHUP or `vnetctl reload`. Without --config, the port
flags (--socket-path, --fd, --tap, --null) make exactly two ports, cross-connected. Every
option of the configuration file is also a flag: the key with dashes, so tx_batch is
--tx-batch.

Under systemd (Type=notify) vnetd reports READY once every configured port is open, pings
the watchdog while its control loop and every worker answer, and hands its ports over to a
new binary on `vnetctl upgrade` without dropping the guests' connections. vnetctl(8) drives
a running vnetd through its control socket.)";

constexpr std::string_view kFiles = R"(/etc/vnetd/vnetd.toml
The configuration the systemd unit starts vnetd with.

/run/vnetd/vnetd.ctl
The control socket vnetctl talks to (control_socket).

/run/vnetd
The sockets of the virtual machines' ports, by convention.)";

}  // namespace

int print_generated_doc(std::string_view kind, const CLI::App& app) {
    if (kind == "man") {
        std::cout << cli_docs::man_page(
            app, cli_docs::ManPageText{"vnetd", 8,
                                       "user-space virtio-net data plane (vhost-user back end)",
                                       kDescription, kFiles,
                                       "vnetctl(8), vnetd.toml(5), systemd.service(5), qemu(1)"});
        return 0;
    }
    if (kind == "config-man") {
        std::cout << config_man_page();
        return 0;
    }
    if (kind == "bash-completion") {
        std::cout << cli_docs::bash_completion(app, "vnetd");
        return 0;
    }
    std::cerr << "vnetd: --generate-doc takes man, config-man or bash-completion\n";
    return 2;
}

}  // namespace vnet::vnetd
