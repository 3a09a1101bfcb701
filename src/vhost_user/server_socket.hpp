// ServerSocket: the back end listens on a unix socket path and runs one
// VhostUserDevice per accepted front end, on a reactor it does not own.
//
// - Start-up: a stale socket file at `path` (a socket nobody listens on) is
//   unlinked; a live one, or a non-socket file, is an error (std::system_error
//   from the constructor: start-up only).
// - At most `max_connections` front ends at a time (hostile-input rule 2);
//   further ones are accepted and closed at once, so they see EOF instead of
//   hanging in the backlog. After a disconnect the socket keeps listening.
// - Accept never blocks; when the process is out of fds, accepting pauses for
//   100 ms instead of spinning on a readable listen socket.
// - Destruction closes every connection (stopping their queues), stops
//   listening and removes the socket file if it is still ours.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "io/reactor.hpp"
#include "io/unix_listener.hpp"
#include "vhost_user/backend_connection.hpp"
#include "vhost_user/device.hpp"

namespace vnet::vhost_user {

struct ServerOptions {
    std::string path;
    // An already listening socket to adopt instead of binding `path` (the
    // back-end convention --fd=FDNUM: the manager made the socket). `path`
    // then only names it in logs and is never unlinked.
    int listen_fd = -1;
    // listen_fd was handed over by the vnetd we replace (upgrade in place)
    // and listens at `path`: the path is ours as if we had bound it.
    bool handed_over = false;
    // The socket file's mode, owner and group, all in place before it
    // appears at `path` (io/unix_listener.hpp); unset: bind's defaults.
    io::SocketAccess access;
    uint32_t max_connections = 1;
    DeviceConfig device;  // device.name defaults to `path` when left at its default
    size_t output_limit = kDefaultOutputLimit;
};

class ServerSocket {
public:
    ServerSocket(io::Reactor& reactor, ServerOptions options, QueueObserver* observer);
    ~ServerSocket();
    ServerSocket(const ServerSocket&) = delete;
    ServerSocket& operator=(const ServerSocket&) = delete;

    const std::string& path() const { return options_.path; }
    size_t connection_count() const;
    // The devices of the open connections (for the control plane / tests).
    std::vector<VhostUserDevice*> devices();
    uint64_t rejected_connections() const { return rejected_; }
    // Closes every connection whose device was broken from outside the
    // protocol (a ring rule broken on the datapath): the front end sees EOF
    // at once, as it does for a refused message, and its memory and fds go.
    void close_broken_connections();
    // Upgrade in place: the listening socket, for the successor, and
    // letting go of it once the successor has it (no more accepts here; the
    // path stays, the connections are closed with this object).
    int listen_fd() const { return listen_.fd(); }
    void hand_over_listener();

private:
    static constexpr std::chrono::milliseconds kAcceptPause{100};

    void on_listen_ready();
    void accept_one(UniqueFd fd);
    void on_connection_closed();
    void reap_closed_connections();
    void pause_accepting();

    io::Reactor& reactor_;
    ServerOptions options_;
    QueueObserver* observer_;
    Logger log_;
    io::UnixListener listen_;
    std::vector<std::unique_ptr<BackendConnection>> connections_;
    io::Reactor::TimerId reap_timer_ = 0;
    io::Reactor::TimerId resume_timer_ = 0;
    uint64_t rejected_ = 0;
};

}  // namespace vnet::vhost_user
