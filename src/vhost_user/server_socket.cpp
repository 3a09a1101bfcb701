#include "vhost_user/server_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "io/unix_address.hpp"

namespace vnet::vhost_user {
namespace {

// Rejections are logged, but a connect flood must not flood the log.
bool should_log_rejection(uint64_t count) {
    return count <= 10 || count % 1000 == 0;
}

}  // namespace

ServerSocket::ServerSocket(io::Reactor& reactor, ServerOptions options, QueueObserver* observer)
    : reactor_(reactor),
      options_(std::move(options)),
      observer_(observer),
      log_(make_logger(options_.path)) {
    if (options_.device.name == DeviceConfig{}.name) {
        options_.device.name = options_.path;
    }
    options_.max_connections = std::max<uint32_t>(options_.max_connections, 1);
    if (options_.listen_fd >= 0 && options_.handed_over) {
        listen_ = io::UnixListener::adopt_handed_over(options_.listen_fd, options_.path);
    } else if (options_.listen_fd >= 0) {
        listen_ = io::UnixListener::adopt(options_.listen_fd,
                                          "--fd " + std::to_string(options_.listen_fd));
    } else {
        listen_ = io::UnixListener(options_.path, options_.access);
    }
    reactor_.watch(listen_.fd(), EPOLLIN, [this](uint32_t) { on_listen_ready(); });
    log_->info("listening (at most {} front end(s))", options_.max_connections);
}

ServerSocket::~ServerSocket() {
    reactor_.cancel(reap_timer_);
    reactor_.cancel(resume_timer_);
    connections_.clear();  // closes sockets, stops queues
    if (listen_) {
        reactor_.unwatch(listen_.fd());
    }
}

void ServerSocket::hand_over_listener() {
    reactor_.cancel(resume_timer_);
    resume_timer_ = 0;
    if (listen_) {
        reactor_.unwatch(listen_.fd());
        listen_.hand_over();
    }
}

size_t ServerSocket::connection_count() const {
    return std::count_if(connections_.begin(), connections_.end(),
                         [](const auto& c) { return c->is_open(); });
}

std::vector<VhostUserDevice*> ServerSocket::devices() {
    std::vector<VhostUserDevice*> out;
    for (auto& c : connections_) {
        if (VhostUserDevice* d = c->device()) {
            out.push_back(d);
        }
    }
    return out;
}

void ServerSocket::close_broken_connections() {
    for (auto& c : connections_) {
        VhostUserDevice* d = c->device();
        if (d != nullptr && d->is_broken()) {
            c->close("device broken: " + d->broken_reason());
        }
    }
}

void ServerSocket::on_listen_ready() {
    for (;;) {
        UniqueFd fd(::accept4(listen_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                log_->warn("accept: {}; pausing", std::strerror(errno));
                pause_accepting();
            }
            return;  // EAGAIN: all accepted
        }
        accept_one(std::move(fd));
    }
}

void ServerSocket::accept_one(UniqueFd fd) {
    if (connection_count() >= options_.max_connections) {
        ++rejected_;
        if (should_log_rejection(rejected_)) {
            log_->warn("rejected a front end: {} already connected ({} rejected so far)",
                       options_.max_connections, rejected_);
        }
        return;  // `fd` closes: the peer sees EOF
    }
    try {
        connections_.push_back(std::make_unique<BackendConnection>(
            reactor_, std::move(fd), options_.device, observer_, [this] { on_connection_closed(); },
            options_.output_limit));
    } catch (const std::exception& e) {
        log_->error("could not set up a connection: {}", e.what());
    }
}

void ServerSocket::on_connection_closed() {
    // Called from inside the connection's own callback: destroy it later.
    if (reap_timer_ == 0) {
        reap_timer_ = reactor_.schedule(std::chrono::milliseconds(0), [this] {
            reap_timer_ = 0;
            reap_closed_connections();
        });
    }
}

void ServerSocket::reap_closed_connections() {
    std::erase_if(connections_, [](const auto& c) { return !c->is_open(); });
}

void ServerSocket::pause_accepting() {
    reactor_.unwatch(listen_.fd());
    resume_timer_ = reactor_.schedule(kAcceptPause, [this] {
        resume_timer_ = 0;
        reactor_.watch(listen_.fd(), EPOLLIN, [this](uint32_t) { on_listen_ready(); });
    });
}

}  // namespace vnet::vhost_user
