#include "control/ports/vhost_user/vhost_user_service.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace vnet::control {

BuiltPort build_vhost_user_port(const PortConfig& config, const PortContext& context) {
    auto port = std::make_unique<ports::VhostUserPort>(
        config.name, context.config.queue_pairs_of(config), context.run_on_owner);
    port->set_streaming_stores(std::get<VhostUserSettings>(config.settings).streaming_stores);
    auto service = std::make_unique<VhostUserService>(*port, config, context);
    return {std::move(port), std::move(service)};
}

void vhost_user_list_fields(const PortConfig& config, nlohmann::json& out) {
    const VhostUserSettings& v = std::get<VhostUserSettings>(config.settings);
    out["socket_path"] = v.socket_path;
    out["client"] = v.client;
}

std::string vhost_user_handover_key(const PortConfig& config) {
    const VhostUserSettings& v = std::get<VhostUserSettings>(config.settings);
    return v.client ? "client:" + v.socket_path : v.socket_path;
}

VhostUserService::VhostUserService(ports::VhostUserPort& port, const PortConfig& config,
                                   const PortContext& context)
    : port_(port),
      config_(config),
      log_(context.log),
      reactor_(context.reactor),
      control_queue_(context.control_queue) {
    if (context.handed_over != nullptr && context.handed_over->size() == 1 &&
        !std::get<VhostUserSettings>(config.settings).client) {
        handed_over_ = std::move(context.handed_over->front());
    }
}

// Closing the sockets closes their connections, which stops the rings on
// the owning workers: the daemon destroys services while workers still run.
VhostUserService::~VhostUserService() = default;

std::vector<vhost_user::VhostUserDevice*> VhostUserService::devices() {
    if (server_) {
        return server_->devices();
    }
    if (client_ && client_->device() != nullptr) {
        return {client_->device()};
    }
    return {};
}

void VhostUserService::start(ports::Port* peer) {
    vhost_user::DeviceConfig dc;
    dc.name = config_.name;
    // Queue pairs that have paths: both ends of a cross-connect serve them.
    dc.max_queue_pairs =
        peer == nullptr ? port_.queue_count() : std::min(port_.queue_count(), peer->queue_count());
    dc.mtu = config_.mtu;
    if (peer != nullptr) {
        follow_guest(*peer);
    }
    port_.set_ring_error_handler([this](uint32_t ring, std::string reason) {
        // On a worker: only post. The device is looked up again on the
        // control thread, where it may already be gone.
        control_queue_.post([this, ring, reason = std::move(reason)] {
            for (vhost_user::VhostUserDevice* dev : devices()) {
                dev->mark_broken("ring " + std::to_string(ring) + ": " + reason);
            }
            // USAGE.md "Hostile guests": the connection is dropped, now,
            // not when the front end next speaks.
            if (server_) {
                server_->close_broken_connections();
            }
            if (client_) {
                client_->close_if_broken();
            }
        });
    });
    open_socket(dc);
}

void VhostUserService::set_peer(ports::Port* peer) {
    if (peer != nullptr) {
        follow_guest(*peer);
        return;
    }
    port_.set_queue_pair_handler({});
    port_.set_features_handler({});
}

// The peer adapts to the guest: its offloads to the guest's features, and
// (a multiqueue tap) its queues to the guest's running queue pairs, so that
// a guest with 1 of 4 pairs enabled still sees all its traffic. Both
// handlers run inside the device's message handling: an exception there
// would unwind through the protocol engine and end the daemon, so a refused
// ioctl is logged and the peer keeps what it had.
void VhostUserService::follow_guest(ports::Port& peer) {
    for (uint16_t q = 1; q < peer.queue_count(); ++q) {
        peer.follow_peer_queue_pair(q, false);  // until the guest runs queue pair q
    }
    port_.set_queue_pair_handler([this, &peer](uint16_t q, bool running) {
        try {
            peer.follow_peer_queue_pair(q, running);
        } catch (const std::exception& e) {
            log_->warn("port {}: queue pair {}: {}", config_.name, q, e.what());
        }
    });
    port_.set_features_handler([this, &peer](virtio::FeatureSet f) {
        try {
            std::string applied = peer.follow_peer_features(f);
            if (!applied.empty()) {
                log_->info("port {}: guest features 0x{:x}; {}", config_.name, f.bits(), applied);
            }
        } catch (const std::exception& e) {
            log_->warn("port {}: guest features 0x{:x}: {}", config_.name, f.bits(), e.what());
        }
    });
}

void VhostUserService::open_socket(const vhost_user::DeviceConfig& dc) {
    const PortConfig& pc = config_;
    const VhostUserSettings& v = std::get<VhostUserSettings>(pc.settings);
    if (v.client) {
        vhost_user::ClientOptions o;
        o.path = v.socket_path;
        o.device = dc;
        client_ = std::make_unique<vhost_user::ClientSocket>(reactor_, o, &port_);
        log_->info("port {}: connecting to {} (client, reconnects forever)", pc.name,
                   v.socket_path);
        return;
    }
    vhost_user::ServerOptions o;
    o.path = v.listen_fd >= 0 ? "fd:" + std::to_string(v.listen_fd) : v.socket_path;
    o.listen_fd = v.listen_fd;
    if (handed_over_) {
        o.path = v.socket_path;
        o.listen_fd = handed_over_.release();  // the server socket owns it from here
        o.handed_over = true;
    }
    o.access = {.mode = v.socket_mode, .owner = v.socket_owner, .group = v.socket_group};
    o.device = dc;
    server_ = std::make_unique<vhost_user::ServerSocket>(reactor_, o, &port_);
    if (o.handed_over) {
        log_->info("port {}: listening on {} (handed over)", pc.name, v.socket_path);
        return;
    }
    if (v.listen_fd >= 0) {
        log_->info("port {}: listening on inherited fd {}", pc.name, v.listen_fd);
        return;
    }
    log_->info("port {}: listening on {}", pc.name, v.socket_path);
}

std::vector<int> VhostUserService::handover_fds() {
    if (server_ && server_->listen_fd() >= 0) {
        return {server_->listen_fd()};
    }
    return {};
}

void VhostUserService::hand_over() {
    if (server_) {
        server_->hand_over_listener();
    }
}

size_t VhostUserService::connections() {
    return devices().size();
}

}  // namespace vnet::control
