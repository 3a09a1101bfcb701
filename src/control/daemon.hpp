// Daemon: vnetd's process. Builds the ports, the workers and the forwarding
// paths from a Config, runs the control thread (vhost-user sockets, signals,
// stats) on an epoll reactor until SIGTERM/SIGINT, and tears everything
// down in the order the threads need: sockets first (their devices hand
// every ring back through the workers), then workers, then ports.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "control/config.hpp"
#include "control/control_queue.hpp"
#include "control/rpc/control_server.hpp"
#include "control/rpc/method_table.hpp"
#include "dataplane/placement.hpp"
#include "dataplane/worker.hpp"
#include "io/epoll_reactor.hpp"
#include "ports/port.hpp"
#include "ports/tap_xdp.hpp"
#include "vhost_user/client_socket.hpp"
#include "vhost_user/server_socket.hpp"

namespace vnet::ports {
class VhostUserPort;
class TapPort;
}  // namespace vnet::ports

namespace vnet::control {

class Daemon {
public:
    explicit Daemon(Config config);
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Runs until SIGTERM/SIGINT (or stop()); returns the exit status.
    int run();
    void stop();

private:
    struct VhostUserEndpoint {
        ports::VhostUserPort* port;
        std::unique_ptr<vhost_user::ServerSocket> server;
        std::unique_ptr<vhost_user::ClientSocket> client;
        std::vector<vhost_user::VhostUserDevice*> devices();
    };

    void create_workers();
    void create_ports();
    void create_paths();
    void attach_xdp(const PortConfig& pc, ports::TapPort& tap);
    const ports::TapXdpProgram* xdp_of(const std::string& port_name) const;
    void offer_gso_to_tap(ports::Port& port, const ports::Port& peer);
    void open_sockets();
    void watch_signals();
    void report_stats(bool final_report);
    nlohmann::json stats_json();
    double seconds_running() const;
    // The control socket and its methods (daemon_methods.cpp).
    void open_control_socket();
    void add_control_methods();
    ports::Port* port_named(const std::string& name);
    ports::TapPort* tap_peer_of(const std::string& name);
    // Queue pairs that have paths: both ends of a cross-connect serve them.
    uint16_t served_queue_pairs(const ports::Port& port);
    // Wires a VM port's queue pairs to the tap queues of its peer.
    void follow_queue_pairs(ports::VhostUserPort& port, ports::TapPort* tap);

    Config config_;
    Logger log_;
    io::EpollReactor reactor_;
    ControlQueue control_queue_;
    std::vector<std::unique_ptr<dataplane::Worker>> workers_;
    dataplane::Placement placement_{1};
    std::vector<std::unique_ptr<ports::Port>> ports_;
    // XDP programs on taps, by port name. Declared after ports_ so that they
    // are detached before their taps close, also when a constructor throws.
    std::map<std::string, std::unique_ptr<ports::TapXdpProgram>> xdp_programs_;
    std::vector<VhostUserEndpoint> endpoints_;
    rpc::MethodTable control_methods_;
    std::unique_ptr<rpc::ControlServer> control_server_;
    UniqueFd signal_fd_;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace vnet::control
