#include "vhost_user/client_socket.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/unix_address.hpp"

namespace vnet::vhost_user {

ClientSocket::ClientSocket(io::Reactor& reactor, ClientOptions options, QueueObserver* observer)
    : reactor_(reactor),
      options_(std::move(options)),
      observer_(observer),
      log_(make_logger(options_.path)),
      backoff_(options_.min_backoff) {
    if (options_.device.name == DeviceConfig{}.name) {
        options_.device.name = options_.path;
    }
    options_.min_backoff = std::max(options_.min_backoff, std::chrono::milliseconds(1));
    options_.max_backoff = std::max(options_.max_backoff, options_.min_backoff);
    backoff_ = options_.min_backoff;
    try_connect();
}

ClientSocket::~ClientSocket() {
    reactor_.cancel(retry_timer_);
    connection_.reset();  // closes the socket, stops queues
}

void ClientSocket::try_connect() {
    ++attempts_;
    sockaddr_un addr;
    if (!io::make_unix_address(options_.path, &addr)) {
        log_->error("bad socket path; not connecting");
        return;
    }
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd || ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        // A full backlog (EAGAIN) is a failure like any other: never wait on it.
        if (!logged_failure_) {
            log_->info("connect failed: {}; retrying with backoff", std::strerror(errno));
            logged_failure_ = true;
        }
        schedule_retry();
        return;
    }
    logged_failure_ = false;
    try {
        connection_ = std::make_unique<BackendConnection>(
            reactor_, std::move(fd), options_.device, observer_, [this] { on_connection_closed(); },
            options_.output_limit);
    } catch (const std::exception& e) {
        log_->error("could not set up the connection: {}", e.what());
        schedule_retry();
        return;
    }
    connected_at_ = Clock::now();
}

void ClientSocket::schedule_retry() {
    const auto wait = backoff_;
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    retry_timer_ = reactor_.schedule(wait, [this] {
        retry_timer_ = 0;
        connection_.reset();  // the closed one, now outside its own callback
        try_connect();
    });
}

void ClientSocket::close_if_broken() {
    VhostUserDevice* d = device();
    if (d != nullptr && d->is_broken()) {
        connection_->close("device broken: " + d->broken_reason());
    }
}

void ClientSocket::on_connection_closed() {
    // Inside the connection's callback: it is destroyed by the retry timer.
    if (Clock::now() - connected_at_ >= options_.max_backoff) {
        backoff_ = options_.min_backoff;
    }
    schedule_retry();
}

}  // namespace vnet::vhost_user
