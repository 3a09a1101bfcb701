#include "control/daemon.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "control/option_table.hpp"
#include "control/stats_report.hpp"

namespace vnet::control {

Daemon::Daemon(Config config)
    : config_(std::move(config)), log_(make_logger("vnetd")), control_queue_(reactor_) {
    config_.validate();
    create_workers();
    create_switches();
    create_ports();
    create_paths();
}

Daemon::~Daemon() {
    // Services first: closing a connection stops its rings, which runs
    // synchronously on the owning workers, so they must still be running.
    services_.clear();
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
        if (i < d.worker_cpus.size()) {
            o.cpu = d.worker_cpus[i];
        }
        o.name = "vnet-worker" + std::to_string(i);
        workers_.push_back(std::make_unique<dataplane::Worker>(o));
    }
    placement_ = dataplane::Placement(workers_.size());
}

void Daemon::create_ports() {
    for (const PortConfig& pc : config_.ports) {
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
        };
        BuiltPort built = factory->build(pc, context);
        if (built.service) {
            services_.emplace_back(pc.name, std::move(built.service));
        }
        ports_.push_back(PortEntry{factory->kind, std::move(built.port)});
        if (!pc.switch_name.empty()) {
            attach_to_switch(pc, *ports_.back().port);
        }
    }
}

ports::Port* Daemon::port_named(const std::string& name) {
    for (PortEntry& p : ports_) {
        if (p.port->name() == name) {
            return p.port.get();
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
    using virtio::Feature;
    const virtio::FeatureSet everything{Feature::net_guest_csum, Feature::net_guest_tso4,
                                        Feature::net_guest_tso6, Feature::net_guest_ecn,
                                        Feature::net_guest_ufo,  Feature::net_guest_uso4,
                                        Feature::net_guest_uso6};
    std::string applied = port.follow_peer_features(everything);
    if (!applied.empty()) {
        log_->info("port {}: {} (peer {} takes GSO frames)", port.name(), applied, peer.name());
    }
}

void Daemon::create_paths() {
    dataplane::PathOptions po;
    po.tx_batch = config_.datapath.tx_batch;
    po.weight_packets = config_.datapath.weight_packets;
    po.weight_bytes = config_.datapath.weight_bytes;
    po.tx_peek = config_.datapath.tx_peek;
    po.gro = config_.datapath.gro;
    po.gro_udp = config_.datapath.gro_udp;
    po.rx_frames = config_.datapath.rx_frames;
    po.rx_usecs = config_.datapath.rx_usecs;
    for (size_t connection = 0; connection < config_.connections.size(); ++connection) {
        const auto& [a_name, b_name] = config_.connections[connection];
        ports::Port* a = port_named(a_name);
        ports::Port* b = port_named(b_name);
        offer_gso(*a, *b);
        offer_gso(*b, *a);
        uint16_t queues = std::min(a->queue_count(), b->queue_count());
        for (uint16_t q = 0; q < queues; ++q) {
            dataplane::Worker& w = *workers_[placement_.worker_for(connection, q)];
            // A direction whose source produces nothing (a discard port)
            // has no path.
            for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
                if (dataplane::ForwardPath::style_between(from->capabilities(q),
                                                          to->capabilities(q))) {
                    w.add_path(std::make_unique<dataplane::ForwardPath>(*from, q, *to, q, po));
                }
            }
        }
        log_->info(
            "cross-connect {} <-> {} ({} queue pair(s) from worker {}, tx_batch {}, "
            "tx_peek {}, gro {})",
            a_name, b_name, queues, placement_.worker_for(connection, 0), po.tx_batch, po.tx_peek,
            po.gro);
    }
}

void Daemon::start_services() {
    for (auto& [name, service] : services_) {
        const PortConfig* peer = config_.peer_of(name);
        service->start(peer == nullptr ? nullptr : port_named(peer->name));
    }
}

void Daemon::watch_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    // Blocked in every thread (workers inherit the mask when started after
    // this), delivered through the signalfd to the control loop only.
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!signal_fd_) {
        throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
    }
    reactor_.watch(signal_fd_.get(), EPOLLIN, [this](uint32_t) {
        signalfd_siginfo info{};
        if (::read(signal_fd_.get(), &info, sizeof(info)) == sizeof(info)) {
            log_->info("signal {}: shutting down", info.ssi_signo);
        }
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
    if (!config_.stats_file.empty()) {
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
    watch_signals();
    for (auto& w : workers_) {
        w->start();
    }
    started_ = std::chrono::steady_clock::now();
    start_services();
    open_control_socket();
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
    control_server_.reset();
    services_.clear();  // hand every ring back while the workers still run
    report_stats(true);
    return 0;
}

void Daemon::stop() {
    reactor_.stop();
}

}  // namespace vnet::control
