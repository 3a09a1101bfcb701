// ControlServer: the control socket. A unix stream socket on the control
// reactor where each line a client sends is a JSON-RPC request and each
// answer goes back as one line. Clients are untrusted in the same way as
// front ends: a request line longer than the limit, more clients than the
// limit, or a client that does not read its answers is disconnected, and
// nothing a client sends can block the control thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "control/rpc/method_table.hpp"
#include "io/reactor.hpp"
#include "io/unix_listener.hpp"

namespace vnet::control::rpc {

struct ControlServerOptions {
    std::string path;
    // Both in place before the socket appears at `path` (no moment with the
    // umask's default or root's group); the group lets one group of users in.
    mode_t mode = 0600;
    std::optional<gid_t> group;
    // Upgrade in place: the listening socket at `path` that the vnetd we
    // replace handed over, served instead of binding a new one.
    int handed_over_fd = -1;
    size_t max_clients = 16;
    size_t max_line_bytes = 1 << 20;
    size_t max_pending_output = 16 << 20;
};

class ControlServer {
public:
    // Throws std::system_error (path in use, bad directory...) at start-up.
    ControlServer(io::Reactor& reactor, ControlServerOptions options, const MethodTable& methods);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    const std::string& path() const { return options_.path; }
    size_t client_count() const { return clients_.size(); }
    // Upgrade in place: the listening socket, for the successor, and
    // letting go of it (the clients connected now are still served).
    int listen_fd() const { return listener_.fd(); }
    void hand_over_listener();

private:
    struct Client {
        UniqueFd fd;
        std::string input;
        std::string output;
        size_t output_head = 0;
        bool input_done = false;  // the client shut down its sending side
        bool closing = false;
    };

    void on_listen_ready();
    void on_client_ready(Client& client, uint32_t events);
    void read_requests(Client& client);
    void flush(Client& client);
    void close_later(Client& client, const char* why);
    void reap();

    io::Reactor& reactor_;
    ControlServerOptions options_;
    const MethodTable& methods_;
    Logger log_;
    io::UnixListener listener_;
    std::vector<std::unique_ptr<Client>> clients_;
    io::Reactor::TimerId reap_timer_ = 0;
};

}  // namespace vnet::control::rpc
