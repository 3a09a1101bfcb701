#include "control/daemon.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "control/option_table.hpp"
#include "control/stats_report.hpp"
#include "ports/null_port.hpp"
#include "ports/tap_port.hpp"
#include "ports/vhost_user_port.hpp"

namespace vnet::control {

std::vector<vhost_user::VhostUserDevice*> Daemon::VhostUserEndpoint::devices() {
    if (server) {
        return server->devices();
    }
    if (client && client->device() != nullptr) {
        return {client->device()};
    }
    return {};
}

Daemon::Daemon(Config config)
    : config_(std::move(config)), log_(make_logger("vnetd")), control_queue_(reactor_) {
    config_.validate();
    create_workers();
    create_ports();
    create_paths();
}

Daemon::~Daemon() {
    // Sockets first: closing a connection stops its rings, which runs
    // synchronously on the owning workers, so they must still be running.
    endpoints_.clear();
    for (auto& w : workers_) {
        w->stop();
    }
    workers_.clear();
    xdp_programs_.clear();  // detach while the taps still exist
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
        switch (pc.type) {
            case PortType::null:
                ports_.push_back(
                    std::make_unique<ports::NullPort>(pc.name, config_.queue_pairs_of(pc)));
                break;
            case PortType::tap: {
                ports::TapPortOptions o;
                o.tap.name = pc.ifname.empty() ? pc.name : pc.ifname;
                o.tap.persist = pc.persist;
                o.tap.napi = pc.napi;
                o.tap.napi_frags = pc.napi_frags;
                o.tap.txqueuelen = pc.txqueuelen;
                if (pc.mtu) {
                    o.tap.mtu = *pc.mtu;
                }
                o.submit_mode = config_.datapath.submit;
                o.queues = config_.queue_pairs_of(pc);
                auto tap = std::make_unique<ports::TapPort>(pc.name, o);
                log_->info("port {}: tap {} (ifindex {}, {} queue(s), napi {}, submit {})", pc.name,
                           tap->device().name(), tap->device().ifindex(), tap->queue_count(),
                           tap->device().napi(), io::to_string(tap->submit_mode()));
                attach_xdp(pc, *tap);
                ports_.push_back(std::move(tap));
                break;
            }
            case PortType::vhost_user: {
                auto run_on_owner = [this, connection = config_.connection_of(pc.name)](
                                        uint16_t queue, const std::function<void()>& work) {
                    workers_[placement_.worker_for(connection, queue)]->run_sync(work);
                };
                auto port = std::make_unique<ports::VhostUserPort>(
                    pc.name, config_.queue_pairs_of(pc), run_on_owner);
                endpoints_.push_back(VhostUserEndpoint{port.get(), nullptr, nullptr});
                ports_.push_back(std::move(port));
                break;
            }
        }
    }
}

// Right after the tap is opened, before any worker writes to it: the
// program sees every frame vnetd sends (docs/USAGE.md "XDP on the tap").
void Daemon::attach_xdp(const PortConfig& pc, ports::TapPort& tap) {
    if (pc.xdp.empty()) {
        return;
    }
    const std::string device = "tap '" + tap.device().name() + "'";
    ports::TapXdpOptions o;
    o.program = ports::split_xdp_spec(pc.xdp);
    o.mode = ports::parse_xdp_mode(pc.xdp_mode).value_or(ports::XdpMode::auto_select);
    if (!pc.xdp_redirect.empty()) {
        o.redirect_ifindex = ports::xdp_redirect_target(device, pc.xdp_redirect);
    }
    auto xdp = std::make_unique<ports::TapXdpProgram>(device, tap.device().ifindex(), o);
    log_->info("port {}: xdp program {} section {} from {} on tap {}: {} mode (id {}){}", pc.name,
               xdp->program_name(), xdp->section(), xdp->file(), tap.device().name(),
               ports::to_string(xdp->mode()), xdp->program_id(),
               pc.xdp_redirect.empty() ? "" : ", redirect to " + pc.xdp_redirect);
    xdp_programs_[pc.name] = std::move(xdp);
}

const ports::TapXdpProgram* Daemon::xdp_of(const std::string& port_name) const {
    auto it = xdp_programs_.find(port_name);
    return it == xdp_programs_.end() ? nullptr : it->second.get();
}

ports::Port* Daemon::port_named(const std::string& name) {
    for (auto& p : ports_) {
        if (p->name() == name) {
            return p.get();
        }
    }
    return nullptr;
}

ports::TapPort* Daemon::tap_peer_of(const std::string& name) {
    for (const auto& [a, b] : config_.connections) {
        const std::string* peer = a == name ? &b : (b == name ? &a : nullptr);
        if (peer != nullptr) {
            return dynamic_cast<ports::TapPort*>(port_named(*peer));
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
// partial checksums too, which is what lets GRO merge them.
void Daemon::offer_gso_to_tap(ports::Port& port, const ports::Port& peer) {
    auto* tap = dynamic_cast<ports::TapPort*>(&port);
    if (tap == nullptr || peer.kind() == ports::PortKind::vhost_user) {
        return;
    }
    using virtio::Feature;
    const virtio::FeatureSet everything{Feature::net_guest_csum, Feature::net_guest_tso4,
                                        Feature::net_guest_tso6, Feature::net_guest_ecn,
                                        Feature::net_guest_ufo,  Feature::net_guest_uso4,
                                        Feature::net_guest_uso6};
    ports::TunOffloads applied = tap->apply_guest_features(everything);
    log_->info("port {}: tap {} offloads {} (peer {} takes GSO frames)", port.name(),
               tap->device().name(), ports::to_string(applied), peer.name());
}

uint16_t Daemon::served_queue_pairs(const ports::Port& port) {
    const PortConfig* peer = config_.peer_of(port.name());
    ports::Port* other = peer == nullptr ? nullptr : port_named(peer->name);
    return other == nullptr ? port.queue_count()
                            : std::min(port.queue_count(), other->queue_count());
}

// A multiqueue tap gets frames on any attached queue (the kernel's flow
// steering), so only the queues whose guest queue pair runs stay attached:
// a guest with 1 of 4 pairs enabled still sees all its traffic.
void Daemon::follow_queue_pairs(ports::VhostUserPort& port, ports::TapPort* tap) {
    if (tap == nullptr || tap->queue_count() < 2) {
        return;
    }
    for (uint16_t q = 1; q < tap->queue_count(); ++q) {
        tap->set_queue_attached(q, false);  // until the guest runs queue pair q
    }
    port.set_queue_pair_handler([this, tap, name = port.name()](uint16_t q, bool running) {
        // Inside the device's message handling: a refused ioctl must not
        // unwind through the protocol engine.
        try {
            tap->set_queue_attached(q, running);
        } catch (const std::exception& e) {
            log_->warn("port {}: queue pair {}: {}", name, q, e.what());
        }
    });
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
        offer_gso_to_tap(*a, *b);
        offer_gso_to_tap(*b, *a);
        uint16_t queues = std::min(a->queue_count(), b->queue_count());
        for (uint16_t q = 0; q < queues; ++q) {
            dataplane::Worker& w = *workers_[placement_.worker_for(connection, q)];
            // Null ports only sink: no path out of them.
            if (a->kind() != ports::PortKind::null) {
                w.add_path(std::make_unique<dataplane::ForwardPath>(*a, q, *b, q, po));
            }
            if (b->kind() != ports::PortKind::null) {
                w.add_path(std::make_unique<dataplane::ForwardPath>(*b, q, *a, q, po));
            }
        }
        log_->info(
            "cross-connect {} <-> {} ({} queue pair(s) from worker {}, tx_batch {}, "
            "tx_peek {}, gro {})",
            a_name, b_name, queues, placement_.worker_for(connection, 0), po.tx_batch, po.tx_peek,
            po.gro);
    }
}

void Daemon::open_sockets() {
    for (VhostUserEndpoint& ep : endpoints_) {
        const PortConfig& pc = *config_.find_port(ep.port->name());
        vhost_user::DeviceConfig dc;
        dc.name = pc.name;
        dc.max_queue_pairs = served_queue_pairs(*ep.port);
        dc.mtu = pc.mtu;

        ports::TapPort* tap = tap_peer_of(pc.name);
        follow_queue_pairs(*ep.port, tap);
        ep.port->set_features_handler([this, tap, name = pc.name](virtio::FeatureSet f) {
            if (tap == nullptr) {
                return;
            }
            // Runs inside the vhost-user device's message handling: an
            // exception here would unwind through the protocol engine and
            // end the daemon, so a refused ioctl is logged and the tap keeps
            // its offloads.
            try {
                ports::TunOffloads applied = tap->apply_guest_features(f);
                log_->info("port {}: guest features 0x{:x}; tap {} offloads {}", name, f.bits(),
                           tap->name(), ports::to_string(applied));
            } catch (const std::exception& e) {
                log_->warn("port {}: guest features 0x{:x}: {}", name, f.bits(), e.what());
            }
        });
        ep.port->set_ring_error_handler([this, &ep](uint32_t ring, std::string reason) {
            // On a worker: only post. The device is looked up again on the
            // control thread, where it may already be gone.
            control_queue_.post([&ep, ring, reason = std::move(reason)] {
                for (vhost_user::VhostUserDevice* dev : ep.devices()) {
                    dev->mark_broken("ring " + std::to_string(ring) + ": " + reason);
                }
                // USAGE.md "Hostile guests": the connection is dropped, now,
                // not when the front end next speaks.
                if (ep.server) {
                    ep.server->close_broken_connections();
                }
                if (ep.client) {
                    ep.client->close_if_broken();
                }
            });
        });
        if (pc.client) {
            vhost_user::ClientOptions o;
            o.path = pc.socket_path;
            o.device = dc;
            ep.client = std::make_unique<vhost_user::ClientSocket>(reactor_, o, ep.port);
            log_->info("port {}: connecting to {} (client, reconnects forever)", pc.name,
                       pc.socket_path);
        } else {
            vhost_user::ServerOptions o;
            o.path = pc.listen_fd >= 0 ? "fd:" + std::to_string(pc.listen_fd) : pc.socket_path;
            o.listen_fd = pc.listen_fd;
            o.mode = pc.socket_mode;
            o.device = dc;
            ep.server = std::make_unique<vhost_user::ServerSocket>(reactor_, o, ep.port);
            if (pc.listen_fd >= 0) {
                log_->info("port {}: listening on inherited fd {}", pc.name, pc.listen_fd);
                continue;
            }
            if (pc.socket_owner || pc.socket_group) {
                if (::chown(pc.socket_path.c_str(),
                            pc.socket_owner.value_or(static_cast<uid_t>(-1)),
                            pc.socket_group.value_or(static_cast<gid_t>(-1))) != 0) {
                    throw std::runtime_error("chown " + pc.socket_path + ": " +
                                             std::strerror(errno));
                }
            }
            log_->info("port {}: listening on {}", pc.name, pc.socket_path);
        }
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
    for (auto& p : ports_) {
        j["ports"].push_back(port_stats_json(*p, xdp_of(p->name())));
    }
    return j;
}

double Daemon::seconds_running() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void Daemon::report_stats(bool final_report) {
    const double seconds = seconds_running();
    std::vector<ports::Port*> all;
    for (auto& p : ports_) {
        all.push_back(p.get());
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
    open_sockets();
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
    endpoints_.clear();  // hand every ring back while the workers still run
    report_stats(true);
    return 0;
}

void Daemon::stop() {
    reactor_.stop();
}

}  // namespace vnet::control
