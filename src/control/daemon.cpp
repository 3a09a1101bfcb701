#include "control/daemon.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "control/config/option_table.hpp"
#include "control/lifecycle/reload_summary.hpp"
#include "control/privileges/privilege_drop.hpp"

namespace vnet::control {
namespace {

// While it lives, the tables' changes are one batch: table_changed saves
// nothing, the batch's end does.
class BatchOfChanges {
public:
    explicit BatchOfChanges(bool& under_way) : under_way_(under_way) { under_way_ = true; }
    ~BatchOfChanges() { under_way_ = false; }
    BatchOfChanges(const BatchOfChanges&) = delete;
    BatchOfChanges& operator=(const BatchOfChanges&) = delete;

private:
    bool& under_way_;
};

}  // namespace

Daemon::Daemon(Config config, std::function<Config()> reread)
    : config_(std::move(config)),
      log_(make_logger("vnetd")),
      run_state_(log_, config_.state_file),
      upgrader_(log_),
      control_queue_(reactor_),
      switches_({.config = config_,
                 .log = log_,
                 .reactor = reactor_,
                 .workers = workers_,
                 .placement = placement_,
                 .service_of =
                     [this](const std::string& port) {
                         PortEntry* entry = ports_.entry_named(port);
                         return entry == nullptr ? nullptr : entry->service.get();
                     },
                 .changed = [this] { table_changed(); }}),
      ports_({.config = config_,
              .log = log_,
              .reactor = reactor_,
              .control_queue = control_queue_,
              .workers = workers_,
              .placement = placement_,
              .switches = switches_,
              .handed_over =
                  [this](const PortConfig& pc) {
                      return takeover_ ? takeover_->fds_for(pc) : nullptr;
                  },
              .changed = [this] { table_changed(); }}),
      reloader_(
          log_, std::move(reread), config_,
          {.running = config_,
           .ports = ports_,
           .switches = switches_,
           .set_option = [this](const std::string& key,
                                const std::string& text) { set_run_time_option(key, text); }}),
      metrics_(make_metrics_collector()) {
    config_.validate();
    if (config_.takeover_fd >= 0) {  // upgrade in place: the fds of the vnetd we replace
        takeover_ =
            std::make_unique<upgrade::Takeover>(log_, config_.takeover_fd, config_.control_socket);
        handed_over_control_ = takeover_->take_control_listener();
        took_over_ = true;
    }
    create_workers();
    switches_.open_config_switches();
    ports_.open_config_ports();
    // Before the unused handed-over fds are closed: after an upgrade in
    // place the state's ports take theirs over like the config's.
    restore_run_state();
    if (takeover_) {
        takeover_->close_unused();
    }
}

Daemon::~Daemon() {
    metrics_endpoint_.reset();  // no scrape may wait on what goes next
    // Services first: closing a connection stops its rings, which runs
    // synchronously on the owning workers, so they must still be running.
    ports_.stop_services();
    for (auto& w : workers_) {
        w->stop();
    }
    switches_.clear();
    workers_.clear();
    ports_.clear();
}

void Daemon::create_workers() {
    const DatapathConfig& d = config_.datapath;
    size_t count = std::max<size_t>(1, d.worker_cpus.size());
    for (size_t i = 0; i < count; ++i) {
        dataplane::WorkerOptions o;
        o.mode = d.mode;
        o.busy_poll_us = d.busy_poll_us;
        o.adaptive_spin_us = d.adaptive_spin_us;
        if (i < d.worker_cpus.size()) {
            o.cpu = d.worker_cpus[i];
        }
        o.name = "vnet-worker" + std::to_string(i);
        workers_.push_back(std::make_unique<dataplane::Worker>(o));
    }
    placement_ = dataplane::Placement(workers_.size());
}

nlohmann::json Daemon::reload() {
    nlohmann::json done;
    {
        BatchOfChanges batch(batch_under_way_);
        done = reloader_.reload();
    }
    save_run_state();  // a port of the file may have been a run-time one's peer
    return done;
}

void Daemon::set_run_time_option(const std::string& key, const std::string& text) {
    const OptionSpec* option = find_option(OptionScope::datapath, key);
    if (option == nullptr) {
        option = find_option(OptionScope::daemon, key);
    }
    option->set(config_, nullptr, text);
    if (key == "busy_poll_us") {
        for (auto& w : workers_) {
            w->set_busy_poll_us(config_.datapath.busy_poll_us);
        }
    } else if (key == "log_level") {
        set_log_level(config_.log_level);
    }
}

void Daemon::watch_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR2);  // upgrade in place, as nginx and haproxy take it
    // Blocked in every thread (workers inherit the mask when started after
    // this), delivered through the signalfd to the control loop only.
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!signal_fd_) {
        throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
    }
    reactor_.watch(signal_fd_.get(), EPOLLIN, [this](uint32_t) {
        signalfd_siginfo info{};
        if (::read(signal_fd_.get(), &info, sizeof(info)) != sizeof(info)) {
            return;
        }
        if (info.ssi_signo == SIGHUP) {
            try {
                log_->info("SIGHUP: reloaded the config: {}", reload_summary(reload()));
            } catch (const std::exception& e) {
                log_->error("SIGHUP: {}", e.what());
            }
            return;
        }
        if (info.ssi_signo == SIGUSR2) {
            try {
                log_->info("SIGUSR2: upgraded: {}", upgrade("").dump());
            } catch (const std::exception& e) {
                log_->error("SIGUSR2: {}", e.what());
            }
            return;
        }
        log_->info("signal {}: shutting down", info.ssi_signo);
        stop();
    });
    ::signal(SIGPIPE, SIG_IGN);
}

int Daemon::run() {
    if (takeover_) {  // upgrade in place: after it let go of everything
        takeover_->complete();
        takeover_.reset();
    }
    watch_signals();
    for (auto& w : workers_) {
        w->start();
    }
    started_ = std::chrono::steady_clock::now();
    ports_.start_services();
    open_control_socket();
    open_metrics_endpoint();
    drop_privileges_if_asked();
    notify_systemd_ready();
    if (config_.stats_interval_s > 0 || !config_.stats_file.empty()) {
        auto interval =
            std::chrono::milliseconds(1000 * std::max<uint32_t>(1, config_.stats_interval_s));
        std::function<void()> tick;
        tick = [this, interval, &tick] {
            report_stats(false);
            reactor_.schedule(interval, tick);
        };
        reactor_.schedule(interval, tick);
        reactor_.run();
    } else {
        reactor_.run();
    }
    if (!handed_over_) {  // else the unit's main process is the successor now
        systemd_.stopping("shutting down");
    }
    watchdog_.reset();
    control_server_.reset();
    metrics_endpoint_.reset();  // before the control thread stops answering its scrapes
    ports_.stop_services();     // hand every ring back while the workers still run
    // Then stop them, so the final figures are all the dataplane did: the
    // stats file and the table below are read apart, and a tap-to-tap
    // cross-connect would otherwise go on moving packets between the two.
    for (auto& w : workers_) {
        w->stop();
    }
    report_stats(true);
    return 0;
}

// After everything that needs root is open: the taps (and their XDP
// programs) in the constructor, the sockets with their owners and modes.
// CAP_NET_ADMIN stays while ports can be added (vnetctl, SIGHUP).
void Daemon::drop_privileges_if_asked() {
    if (!config_.run_as_user) {
        return;
    }
    PrivilegeDrop drop;
    drop.uid = *config_.run_as_user;
    drop.gid = config_.run_as_group;
    drop.keep_net_admin = control_server_ != nullptr || reloader_.can_reread();
    log_->info("running as {}", drop_privileges(drop));
}

// systemd (Type=notify): every port is open by now (taps in the
// constructor, sockets listening or connecting in start_services), so a
// unit ordered after vnetd finds them; then the watchdog starts.
void Daemon::notify_systemd_ready() {
    std::string status = std::to_string(ports_.size()) + " port(s) open:";
    for (const PortEntry& p : ports_) {
        status += " " + p.port->name() + " (" + std::string(p.kind) + ")";
    }
    systemd_.ready(status, took_over_);
    std::vector<dataplane::Worker*> workers;
    for (auto& w : workers_) {
        workers.push_back(w.get());
    }
    watchdog_ = std::make_unique<Watchdog>(reactor_, systemd_, std::move(workers), log_);
}

void Daemon::stop() {
    reactor_.stop();
}

// What vnetctl added, for a restart (lifecycle/run_state_writer.hpp).
void Daemon::save_run_state() {
    if (!handed_over_) {  // after an upgrade in place the file is the successor's
        run_state_.save(config_, reloader_.file_config());
    }
}

void Daemon::table_changed() {
    if (!batch_under_way_) {
        save_run_state();
    }
}

// Not saved after: an item that failed stays in the file for the next start.
void Daemon::restore_run_state() {
    BatchOfChanges batch(batch_under_way_);
    run_state_.restore(config_, {[this](const SwitchConfig& sc) { switches_.add_switch(sc); },
                                 [this](PortConfig pc, const std::string& peer) {
                                     ports_.add_port(std::move(pc), peer);
                                 }});
}

}  // namespace vnet::control
