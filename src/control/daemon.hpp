// Daemon: vnetd's process, wiring only. Builds the workers, the ports (each
// by its kind's entry in port_factory.hpp) and the forwarding paths (each
// style chosen by dataplane/ from the ends' capabilities) from a Config,
// runs the control thread (the ports' services such as vhost-user sockets,
// signals, stats) on an epoll reactor until SIGTERM/SIGINT, and tears
// everything down in the order the threads need: services first (a
// device hands every ring back through the workers), then workers, then
// ports.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "control/config.hpp"
#include "control/control_queue.hpp"
#include "control/port_factory.hpp"
#include "control/rpc/control_server.hpp"
#include "control/rpc/method_table.hpp"
#include "dataplane/ingress_policer.hpp"
#include "dataplane/placement.hpp"
#include "dataplane/worker.hpp"
#include "io/epoll_reactor.hpp"
#include "ports/port.hpp"

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
    struct PortEntry {
        std::string_view kind;  // its factory's kind name
        std::unique_ptr<ports::Port> port;
        // Its ingress policing bucket, shared by the paths from it.
        std::unique_ptr<dataplane::IngressPolicer> policer;
    };

    void create_workers();
    void create_ports();
    void create_paths();
    // A `peer` without a front end to negotiate offloads takes any GSO
    // frame: `port` is told so (a tap then takes 64 KB frames from the host).
    void offer_gso(ports::Port& port, const ports::Port& peer);
    void start_services();
    void watch_signals();
    void report_stats(bool final_report);
    nlohmann::json stats_json();
    double seconds_running() const;
    // The control socket and its methods (daemon_methods.cpp).
    void open_control_socket();
    void add_control_methods();
    ports::Port* port_named(const std::string& name);
    PortEntry* entry_of(const ports::Port& port);
    // port.set: ingress policing at run time, on the worker of the port's
    // queue pair 0 (a command between rounds).
    nlohmann::json set_port(const nlohmann::json& params);

    Config config_;
    Logger log_;
    io::EpollReactor reactor_;
    ControlQueue control_queue_;
    std::vector<std::unique_ptr<dataplane::Worker>> workers_;
    dataplane::Placement placement_{1};
    std::vector<PortEntry> ports_;
    // The ports' services with their port's name, in config order. Declared
    // after ports_: they go first, also when a constructor throws.
    std::vector<std::pair<std::string, std::unique_ptr<PortService>>> services_;
    rpc::MethodTable control_methods_;
    std::unique_ptr<rpc::ControlServer> control_server_;
    UniqueFd signal_fd_;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace vnet::control
