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

    // The one way a port joins or leaves a switch, at start-up and at run
    // time (daemon_switches.cpp): the switch's worker attaches it between
    // rounds. `config` names the switch and the port's VLAN and MAC keys.
    // Throws std::invalid_argument (no such switch, switch full).
    void attach_to_switch(const PortConfig& config, ports::Port& port);
    // False if the port is on no switch.
    bool detach_from_switch(const ports::Port& port);

private:
    struct PortEntry {
        std::string_view kind;  // its factory's kind name
        std::unique_ptr<ports::Port> port;
    };

    void create_workers();
    void create_ports();
    void create_paths();
    void create_switches();  // daemon_switches.cpp
    // The worker that owns queue pair `queue` of the port named so: its
    // switch's, or its cross-connect's by the placement rule.
    dataplane::Worker& owner_of(const std::string& port_name, uint16_t queue);
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
    void add_switch_methods();
    ports::Port* port_named(const std::string& name);

    Config config_;
    Logger log_;
    io::EpollReactor reactor_;
    ControlQueue control_queue_;
    std::vector<std::unique_ptr<dataplane::Worker>> workers_;
    dataplane::Placement placement_{1};
    std::vector<PortEntry> ports_;
    // The switches, in config order; each is owned by its worker and read
    // only through it (run_sync), so the datapath takes no lock.
    struct SwitchEntry {
        std::string name;
        dataplane::Worker* worker;
        dataplane::switching::SwitchDatapath* datapath;
    };
    std::vector<SwitchEntry> switches_;
    // The ports' services with their port's name, in config order. Declared
    // after ports_: they go first, also when a constructor throws.
    std::vector<std::pair<std::string, std::unique_ptr<PortService>>> services_;
    rpc::MethodTable control_methods_;
    std::unique_ptr<rpc::ControlServer> control_server_;
    UniqueFd signal_fd_;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace vnet::control
