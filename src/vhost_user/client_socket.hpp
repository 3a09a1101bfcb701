// ClientSocket: the back end connects to a front end that listens (QEMU
// `server=on`, virtio-user `server=1`) and reconnects forever: after a failed
// attempt or a disconnect it waits, doubling the wait from `min_backoff` up to
// `max_backoff` (100 ms .. 5 s). A connection that lived at least
// `max_backoff` resets the wait to the minimum; one that died sooner keeps
// doubling, so a front end that accepts and closes at once is not hammered.
// Never blocks: connect is non-blocking (a full backlog is just a failure).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/log.hpp"
#include "io/reactor.hpp"
#include "vhost_user/backend_connection.hpp"
#include "vhost_user/device.hpp"

namespace vnet::vhost_user {

struct ClientOptions {
    std::string path;
    DeviceConfig device;  // device.name defaults to `path` when left at its default
    std::chrono::milliseconds min_backoff{100};
    std::chrono::milliseconds max_backoff{5000};
    size_t output_limit = kDefaultOutputLimit;
};

class ClientSocket {
public:
    // Makes the first attempt at once (from the constructor).
    ClientSocket(io::Reactor& reactor, ClientOptions options, QueueObserver* observer);
    ~ClientSocket();
    ClientSocket(const ClientSocket&) = delete;
    ClientSocket& operator=(const ClientSocket&) = delete;

    const std::string& path() const { return options_.path; }
    bool connected() const { return connection_ && connection_->is_open(); }
    VhostUserDevice* device() { return connection_ ? connection_->device() : nullptr; }
    // The wait before the next attempt if the current one fails.
    std::chrono::milliseconds current_backoff() const { return backoff_; }
    uint64_t attempts() const { return attempts_; }
    // Closes the connection if its device was broken from outside the
    // protocol; the usual backoff then reconnects.
    void close_if_broken();

private:
    using Clock = std::chrono::steady_clock;

    void try_connect();
    void schedule_retry();
    void on_connection_closed();

    io::Reactor& reactor_;
    ClientOptions options_;
    QueueObserver* observer_;
    Logger log_;
    std::unique_ptr<BackendConnection> connection_;
    Clock::time_point connected_at_{};
    std::chrono::milliseconds backoff_;
    io::Reactor::TimerId retry_timer_ = 0;
    uint64_t attempts_ = 0;
    bool logged_failure_ = false;
};

}  // namespace vnet::vhost_user
