// ControlServer: the control socket. A unix stream socket on the control
// reactor where each line a client sends is a JSON-RPC request and each
// answer goes back as one line. Clients are untrusted in the same way as
// front ends: a request line longer than the limit, a line left unfinished
// for too long, or a client that does not read its answers is
// disconnected, and nothing a client sends can block the control thread.
//
// Connections are bounded, but no client can lock the others out: when
// every slot is taken, the client idle the longest (no request under way,
// no answer unsent) makes room for the new one; a connection idle past
// idle_timeout is closed anyway; and one slot beyond max_clients is kept
// for root (SO_PEERCRED), so the operator's vnetctl gets in while the
// others are all busy.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "control/rpc/caller.hpp"
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
    size_t root_reserved_clients = 1;  // beyond max_clients, for uid 0 only
    size_t max_line_bytes = 1 << 20;
    // Per client: answers it has not read. Checked before each request is
    // run, so one client holds at most this plus one answer.
    size_t max_pending_output = 16 << 20;
    std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
    // From a line's first byte to its newline.
    std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
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
    // Answers written but not yet taken by their clients, over all clients.
    size_t pending_output_bytes() const;
    // Upgrade in place: the listening socket, for the successor, and
    // letting go of it (the clients connected now are still served).
    int listen_fd() const { return listener_.fd(); }
    void hand_over_listener();

private:
    using Clock = std::chrono::steady_clock;
    struct Client {
        UniqueFd fd;
        std::optional<Caller> caller;  // SO_PEERCRED at connect
        std::string input;
        std::string output;
        size_t output_head = 0;
        bool input_done = false;  // the client shut down its sending side
        bool closing = false;
        Clock::time_point last_active;   // connected, or its last whole request
        Clock::time_point line_started;  // the first byte of an unfinished line
        bool idle() const { return input.empty() && output_head == output.size() && !closing; }
    };

    // Room for one more client from `root`: true if there is a slot, or one
    // was made by closing the longest-idle client.
    bool make_room(bool root);
    void on_listen_ready();
    void on_client_ready(Client& client, uint32_t events);
    void read_requests(Client& client);
    void flush(Client& client);
    void close_later(Client& client, const char* why);
    void reap();
    // Closes clients idle or mid-line for too long; runs once a second
    // while any client is connected.
    void sweep();
    void arm_sweep();

    io::Reactor& reactor_;
    ControlServerOptions options_;
    const MethodTable& methods_;
    Logger log_;
    io::UnixListener listener_;
    std::vector<std::unique_ptr<Client>> clients_;
    io::Reactor::TimerId reap_timer_ = 0;
    io::Reactor::TimerId sweep_timer_ = 0;
};

}  // namespace vnet::control::rpc
