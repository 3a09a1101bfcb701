// BackendConnection: one accepted (server) or established (client) vhost-user
// connection on the back-end side: reads messages without blocking, feeds
// them to its VhostUserDevice, and queues the replies (bounded).
//
// The connection closes itself on EOF, a socket or framing error, a broken
// device, or a reply queue over its limit. Closing unwatches the socket,
// closes it and destroys the device at once (so its queues stop before
// anything else happens), then calls `on_closed`. on_closed runs inside the
// connection's own reactor callback: the owner must not destroy the
// connection from it directly, but defer that (e.g. a 0 ms reactor timer).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "io/reactor.hpp"
#include "vhost_user/connection.hpp"
#include "vhost_user/device.hpp"
#include "vhost_user/output_queue.hpp"

namespace vnet::vhost_user {

class BackendConnection {
public:
    using ClosedCallback = std::function<void()>;

    // `socket` is a connected stream socket; it is made non-blocking.
    BackendConnection(io::Reactor& reactor, UniqueFd socket, DeviceConfig config,
                      QueueObserver* observer, ClosedCallback on_closed,
                      size_t output_limit = kDefaultOutputLimit);
    ~BackendConnection();
    BackendConnection(const BackendConnection&) = delete;
    BackendConnection& operator=(const BackendConnection&) = delete;

    bool is_open() const { return socket_.valid(); }
    // Null once closed.
    VhostUserDevice* device() { return device_.get(); }

    // Closes now (idempotent); `why` is logged.
    void close(const std::string& why);

private:
    // Messages handled per wakeup before yielding to other connections.
    static constexpr int kMaxMessagesPerWakeup = 64;

    void on_events(uint32_t events);
    void read_messages();
    void flush_output();
    // Sends *reply_ with its fds once the output queue is empty; false if it cannot.
    bool send_fd_reply();

    io::Reactor& reactor_;
    UniqueFd socket_;
    Logger log_;
    std::unique_ptr<VhostUserDevice> device_;
    ClosedCallback on_closed_;
    MessageReader reader_;
    OutputQueue output_;
    bool watching_output_ = false;
    std::unique_ptr<Message> request_;  // reused buffers: a Message is 4 KiB
    std::unique_ptr<Message> reply_;
};

}  // namespace vnet::vhost_user
