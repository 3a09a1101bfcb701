#include "control/daemon.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "control/config/option_table.hpp"
#include "control/metrics/stats_report.hpp"
#include "control/privileges/privilege_drop.hpp"

namespace vnet::control {

Daemon::Daemon(Config config, std::function<Config()> reread)
    : config_(std::move(config)),
      log_(make_logger("vnetd")),
      reloader_(log_, std::move(reread), config_),
      run_state_(log_, config_.state_file),
      control_queue_(reactor_),
      metrics_(make_metrics_collector()) {
    config_.validate();
    if (config_.takeover_fd >= 0) {  // upgrade in place: the fds of the vnetd we replace
        takeover_ =
            std::make_unique<upgrade::Takeover>(log_, config_.takeover_fd, config_.control_socket);
        handed_over_control_ = takeover_->take_control_listener();
        took_over_ = true;
    }
    create_workers();
    create_switches();
    for (const PortConfig& pc : config_.ports) {
        ports_.push_back(build_port(pc, config_.connection_of(pc.name)));
        if (!pc.switch_name.empty()) {
            ports_.back().switch_id = attach_to_switch(pc, *ports_.back().port);
        }
    }
    next_placement_group_ = std::max<size_t>(1, config_.connections.size());
    create_paths();
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
    stop_services();
    for (auto& w : workers_) {
        w->stop();
    }
    switches_.clear();  // pointers into the workers, which own the switches
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

Daemon::PortEntry Daemon::build_port(const PortConfig& pc, size_t placement_group) {
    const PortFactoryEntry* factory = find_port_factory(to_string(pc.type));
    if (factory == nullptr) {
        throw std::invalid_argument("port '" + pc.name + "': no factory for type " +
                                    to_string(pc.type));
    }
    PortContext context{
        .config = config_,
        .log = log_,
        .reactor = reactor_,
        .control_queue = control_queue_,
        .run_on_owner =
            [this, name = pc.name](uint16_t queue, const std::function<void()>& work) {
                owner_of(name, queue).run_sync(work);
            },
        .handed_over = takeover_ ? takeover_->fds_for(pc) : nullptr,
    };
    // A guest or tap on a switch with a VXLAN uplink gets the tunnel's MTU
    // unless its port says otherwise: its frames must fit encapsulated (a
    // pod's tap sending 1500-byte frames into a 1450 tunnel would lose
    // every full-sized one). Ports made before the uplink keep theirs.
    PortConfig effective = pc;
    if (factory->takes_uplink_mtu && !pc.mtu && !pc.switch_name.empty()) {
        effective.mtu = config_.uplink_mtu_of(pc.switch_name);
    }
    BuiltPort built = factory->build(effective, context);
    auto policer = std::make_unique<dataplane::IngressPolicer>();
    policer->configure(pc.ingress_policing_rate, pc.ingress_policing_burst);
    return PortEntry{factory->kind, std::move(built.port), placement_group,
                     std::nullopt,  std::move(policer),    std::move(built.service)};
}

Daemon::PortEntry* Daemon::entry_named(const std::string& name) {
    for (PortEntry& p : ports_) {
        if (p.port->name() == name) {
            return &p;
        }
    }
    return nullptr;
}

ports::Port* Daemon::port_named(const std::string& name) {
    PortEntry* entry = entry_named(name);
    return entry == nullptr ? nullptr : entry->port.get();
}

Daemon::PortEntry* Daemon::entry_of(const ports::Port& port) {
    for (PortEntry& p : ports_) {
        if (p.port.get() == &port) {
            return &p;
        }
    }
    return nullptr;
}

// A tap whose peer is not a guest (another tap, a discard port) can take
// any GSO frame on the way out, since a tap accepts GSO writes whatever its
// offloads say: let the host stack hand us 64 KB frames with partial
// checksums (TUNSETOFFLOAD as if a guest had negotiated every GUEST_*
// offload), the pass-through that spares segmenting and re-merging.
// Segments that still arrive one by one (a sender with TSO off) come with
// partial checksums too, which is what lets GRO merge them. A guest peer
// tells its own features when it negotiates them (VhostUserService).
void Daemon::offer_gso(ports::Port& port, const ports::Port& peer) {
    if (peer.has_front_end()) {
        return;
    }
    std::string applied = port.follow_peer_features(every_guest_offload());
    if (!applied.empty()) {
        log_->info("port {}: {} (peer {} takes GSO frames)", port.name(), applied, peer.name());
    }
}

virtio::FeatureSet every_guest_offload() {
    using virtio::Feature;
    return virtio::FeatureSet{Feature::net_guest_csum, Feature::net_guest_tso4,
                              Feature::net_guest_tso6, Feature::net_guest_ecn,
                              Feature::net_guest_ufo,  Feature::net_guest_uso4,
                              Feature::net_guest_uso6};
}

void Daemon::create_paths() {
    for (const auto& [a_name, b_name] : config_.connections) {
        connect_ports(*entry_named(a_name), *entry_named(b_name));
    }
}

void Daemon::connect_ports(PortEntry& a_entry, PortEntry& b_entry) {
    ports::Port* a = a_entry.port.get();
    ports::Port* b = b_entry.port.get();
    dataplane::PathOptions po;
    po.tx_batch = config_.datapath.tx_batch;
    po.weight_packets = config_.datapath.weight_packets;
    po.weight_bytes = config_.datapath.weight_bytes;
    po.tx_peek = config_.datapath.tx_peek;
    po.gro = config_.datapath.gro;
    po.gro_udp = config_.datapath.gro_udp;
    po.rx_frames = config_.datapath.rx_frames;
    po.rx_usecs = config_.datapath.rx_usecs;
    offer_gso(*a, *b);
    offer_gso(*b, *a);
    const size_t group = a_entry.placement_group;
    uint16_t queues = std::min(a->queue_count(), b->queue_count());
    for (uint16_t q = 0; q < queues; ++q) {
        dataplane::Worker& w = *workers_[placement_.worker_for(group, q)];
        // A direction whose source produces nothing (a discard port)
        // has no path.
        for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
            if (dataplane::ForwardPath::style_between(from->capabilities(q), to->capabilities(q))) {
                auto path = std::make_unique<dataplane::ForwardPath>(*from, q, *to, q, po);
                path->set_ingress_policer(entry_of(*from)->policer.get());
                w.run_sync([&w, &path] { w.add_path(std::move(path)); });
            }
        }
    }
    log_->info(
        "cross-connect {} <-> {} ({} queue pair(s) from worker {}, tx_batch {}, "
        "tx_peek {}, gro {})",
        a->name(), b->name(), queues, placement_.worker_for(group, 0), po.tx_batch, po.tx_peek,
        po.gro);
}

void Daemon::disconnect_port(const ports::Port& port) {
    for (auto& worker : workers_) {
        dataplane::Worker& w = *worker;
        w.run_sync([&w, &port] {
            std::vector<const dataplane::ForwardPath*> gone;
            for (const auto& path : w.paths()) {
                if (&path->source() == &port || &path->destination() == &port) {
                    path->abandon_pending();
                    gone.push_back(path.get());
                }
            }
            for (const dataplane::ForwardPath* path : gone) {
                w.remove_path(path);
            }
        });
    }
}

void Daemon::start_services() {
    services_started_ = true;
    for (PortEntry& p : ports_) {
        if (p.service) {
            const PortConfig* peer = config_.peer_of(p.port->name());
            p.service->start(peer == nullptr ? nullptr : port_named(peer->name));
        }
    }
}

void Daemon::stop_services() {
    for (PortEntry& p : ports_) {
        p.service.reset();
    }
}

void Daemon::add_port(PortConfig pc, const std::string& peer) {
    if (config_.find_port(pc.name) != nullptr) {
        throw std::invalid_argument("a port named '" + pc.name + "' exists already");
    }
    Config next = config_;
    next.ports.push_back(pc);
    if (!peer.empty()) {
        if (next.find_port(peer) == nullptr) {
            throw std::invalid_argument("no port named '" + peer + "' to connect to");
        }
        next.connections.emplace_back(peer, pc.name);
    }
    next.validate();
    PortEntry* peer_entry = peer.empty() ? nullptr : entry_named(peer);
    const size_t group =
        peer_entry != nullptr ? peer_entry->placement_group : next_placement_group_++;
    // The new entry is added last and taken away again if anything below
    // throws (a socket path in a missing directory, a tap the kernel
    // refuses): then nothing has changed.
    try {
        ports_.push_back(build_port(pc, group));
    } catch (const std::exception& e) {
        throw std::runtime_error("port '" + pc.name + "': " + e.what());
    }
    PortEntry* added = &ports_.back();
    peer_entry = peer.empty() ? nullptr : entry_named(peer);  // ports_ may have moved
    try {
        if (!pc.switch_name.empty()) {
            added->switch_id = attach_to_switch(pc, *added->port);
        }
        if (peer_entry != nullptr) {
            connect_ports(*peer_entry, *added);
        }
        // Before run(), start_services starts it with the others.
        if (added->service && services_started_) {
            added->service->start(peer_entry == nullptr ? nullptr : peer_entry->port.get());
        }
        if (peer_entry != nullptr && peer_entry->service && services_started_) {
            peer_entry->service->set_peer(added->port.get());
        }
    } catch (const std::exception& e) {
        if (peer_entry != nullptr && peer_entry->service) {
            peer_entry->service->set_peer(nullptr);
        }
        added->service.reset();
        if (added->switch_id) {
            detach_from_switch(*added->port);
        }
        disconnect_port(*added->port);
        ports_.pop_back();
        throw std::runtime_error("port '" + pc.name + "': " + e.what());
    }
    config_ = std::move(next);
    log_->info("port {}: added ({}{}{}{}{})", pc.name, to_string(pc.type),
               peer.empty() ? "" : ", cross-connected to ", peer,
               pc.switch_name.empty() ? "" : ", on switch ", pc.switch_name);
}

nlohmann::json Daemon::reload() {
    nlohmann::json done = reloader_.reload(*this);
    save_run_state();  // a port of the file may have been a run-time one's peer
    return done;
}

bool Daemon::has_port(const std::string& name) {
    return entry_named(name) != nullptr;
}

bool Daemon::has_switch(const std::string& name) {
    return switch_named(name) != nullptr;
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

void Daemon::remove_port(const std::string& name) {
    PortEntry* entry = entry_named(name);
    if (entry == nullptr) {
        throw std::invalid_argument("no port named '" + name + "'");
    }
    const PortConfig* peer_config = config_.peer_of(name);
    PortEntry* peer = peer_config == nullptr ? nullptr : entry_named(peer_config->name);
    // Its guest first (the rings go back through the workers, the guest
    // sees the socket close), then its paths, then the port itself.
    entry->service.reset();
    if (entry->switch_id) {
        detach_from_switch(*entry->port);
    }
    disconnect_port(*entry->port);
    if (peer != nullptr && peer->service) {
        peer->service->set_peer(nullptr);
    }
    ports_.erase(ports_.begin() + (entry - ports_.data()));
    std::erase_if(config_.connections,
                  [&name](const auto& c) { return c.first == name || c.second == name; });
    std::erase_if(config_.ports, [&name](const PortConfig& p) { return p.name == name; });
    log_->info("port {}: removed", name);
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
                log_->info("SIGHUP: reloaded: {}", reload().dump());
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

nlohmann::json Daemon::stats_json() {
    nlohmann::json j;
    j["seconds"] = seconds_running();
    j["datapath"] = datapath_json(config_);
    j["ports"] = nlohmann::json::array();
    for (PortEntry& p : ports_) {
        j["ports"].push_back(port_stats_json(*p.port, p.kind));
    }
    return j;
}

double Daemon::seconds_running() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void Daemon::report_stats(bool final_report) {
    const double seconds = seconds_running();
    std::vector<ports::Port*> all;
    for (PortEntry& p : ports_) {
        all.push_back(p.port.get());
    }
    // After an upgrade the stats file is the successor's.
    if (!config_.stats_file.empty() && !handed_over_) {
        std::string tmp = config_.stats_file + ".tmp";
        std::ofstream(tmp) << stats_json().dump(2) << "\n";
        std::rename(tmp.c_str(), config_.stats_file.c_str());
    }
    if (final_report) {
        log_->info("final stats after {:.1f} s ({}):\n{}", seconds, datapath_summary(config_),
                   stats_table(all, seconds));
    } else if (config_.stats_interval_s > 0) {
        log_->info("stats after {:.1f} s:\n{}", seconds, stats_table(all, seconds));
    }
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
    start_services();
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
    stop_services();            // hand every ring back while the workers still run
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

void Daemon::restore_run_state() {
    run_state_.restore(config_, {[this](const SwitchConfig& sc) { add_switch(sc); },
                                 [this](PortConfig pc, const std::string& peer) {
                                     add_port(std::move(pc), peer);
                                 }});
}

}  // namespace vnet::control
