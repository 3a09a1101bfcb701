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
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "control/config/config.hpp"
#include "control/control_queue.hpp"
#include "control/lifecycle/reloader.hpp"
#include "control/lifecycle/run_state_writer.hpp"
#include "control/lifecycle/upgrade/takeover.hpp"
#include "control/lifecycle/upgrade/upgrader.hpp"
#include "control/metrics/metrics.hpp"
#include "control/ports/port_factory.hpp"
#include "control/ports/port_table.hpp"
#include "control/rpc/audited_control.hpp"
#include "control/rpc/control_api.hpp"
#include "control/rpc/control_server.hpp"
#include "control/rpc/method_table.hpp"
#include "control/switches/switch_table.hpp"
#include "control/systemd/systemd_notify.hpp"
#include "control/systemd/watchdog.hpp"
#include "dataplane/ingress_policer.hpp"
#include "dataplane/placement.hpp"
#include "dataplane/worker.hpp"
#include "io/epoll_reactor.hpp"
#include "ports/port.hpp"

namespace vnet::control {

// Of the control methods it answers its own (DaemonControl: stats, reload,
// upgrade); the port and switch tables answer theirs.
class Daemon final : private DaemonControl {
public:
    // `reread`, if given, reads the config file again as it was read at
    // start-up (the file, then the command line's flags over it): SIGHUP
    // and vnetctl reload apply what changed (lifecycle/reloader.hpp).
    explicit Daemon(Config config, std::function<Config()> reread = {});
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Runs until SIGTERM/SIGINT (or stop()); returns the exit status.
    int run();
    void stop();

    // Re-reads the config file and applies the difference to the last read
    // (lifecycle/reloader.hpp): what it did, as JSON. Throws
    // std::invalid_argument with every reason when it refuses (then nothing
    // changed).
    nlohmann::json reload() override;
    // Metrics (daemon_metrics.cpp): the families `source` builds are part of
    // every scrape of --metrics-address; it runs on the control thread. The
    // ports' and workers' are registered already; other parts (the L2
    // switch) add theirs here.
    void add_metrics_source(MetricsSource source);
    // Upgrade in place (daemon_upgrade.cpp; vnetctl upgrade, SIGUSR2):
    // starts `binary` (empty: ours, as it is on disk now) with our command
    // line to take over every port's fds and the control socket, and once
    // it is ready lets go of everything (workers stopped, guests
    // disconnected: they reconnect to it), so run() returns 0. Throws
    // std::runtime_error with the reason when the new one fails; then this
    // vnetd goes on as before.
    nlohmann::json upgrade(const std::string& binary) override;

private:
    // Upgrade in place, the new side (lifecycle/upgrade/takeover.hpp): the
    // fds offered by the vnetd we replace, from the constructor until run()
    // said ready and it let go; null when we replace none.
    std::unique_ptr<upgrade::Takeover> takeover_;
    UniqueFd handed_over_control_;  // the control socket's listener, if offered
    void hand_over_to_successor();
    bool took_over_ = false;    // we replaced a vnetd (systemd: MAINPID)
    bool handed_over_ = false;  // a successor replaced us: exit quietly

    void create_workers();
    // A reload's change of a run-time option (lifecycle/reloader.hpp).
    void set_run_time_option(const std::string& key, const std::string& text);
    // The run-time state file ([daemon] state_file, RunStateWriter):
    // save_run_state rewrites it (an error is logged, the change stays);
    // the tables call table_changed after each change they make, which
    // saves unless a batch of changes (restoring the file, a reload) is
    // under way: that saves once when it ends, or not at all.
    // restore_run_state re-creates what the file lists once the config's
    // ports exist, each item on its own.
    void save_run_state();
    void table_changed();
    bool batch_under_way_ = false;
    void restore_run_state();
    void watch_signals();
    void report_stats(bool final_report);
    nlohmann::json stats() override;  // the stats method: the stats file's JSON
    double seconds_running() const;
    // The control socket and its methods (daemon_methods.cpp).
    void open_control_socket();
    // The Prometheus endpoint and the sources the daemon itself registers
    // (daemon_metrics.cpp).
    std::shared_ptr<MetricsCollector> make_metrics_collector();
    void open_metrics_endpoint();
    // mac.flush (daemon_mac_flush.cpp): forgets learned MACs on the
    // switches' workers. The daemon's, not the switch table's: a port's
    // flush needs the port's config and the switch it is on.
    nlohmann::json flush_macs(const std::optional<std::string>& switch_name,
                              const std::optional<std::string>& port) override;
    // log.level (daemon_log_level.cpp): every logger's level, set when given.
    nlohmann::json log_level(const std::optional<std::string>& level) override;
    // worker.list (daemon_workers.cpp): each worker's CPU, mode, queue
    // pairs, switches, busy and idle time.
    nlohmann::json list_workers() override;

    Config config_;
    Logger log_;
    RunStateWriter run_state_;
    upgrade::Upgrader upgrader_;  // the old side of an upgrade in place
    io::EpollReactor reactor_;
    ControlQueue control_queue_;
    std::vector<std::unique_ptr<dataplane::Worker>> workers_;
    dataplane::Placement placement_{1};
    SwitchTable switches_;  // before the ports: their port table joins them to it
    PortTable ports_;
    // The control methods' parts behind the log of every change made
    // through the socket (daemon_methods.cpp).
    std::unique_ptr<AuditedControl> control_api_;
    // Owns the config file as last read (ports added with vnetctl are not in it).
    Reloader reloader_;
    rpc::MethodTable control_methods_;
    std::unique_ptr<rpc::ControlServer> control_server_;
    std::shared_ptr<MetricsCollector> metrics_;
    std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
    UniqueFd signal_fd_;
    std::chrono::steady_clock::time_point started_;
    // systemd's notify protocol and watchdog (no-ops outside a unit).
    SystemdNotify systemd_;
    std::unique_ptr<Watchdog> watchdog_;
    void drop_privileges_if_asked();
    void notify_systemd_ready();
};

}  // namespace vnet::control
