#include "control/rpc/control_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace vnet::control::rpc {

// An output buffer keeps its memory between answers up to this; past it, a
// drained buffer gives the memory back.
constexpr size_t kKeptOutputCapacity = 64 * 1024;

ControlServer::ControlServer(io::Reactor& reactor, ControlServerOptions options,
                             const MethodTable& methods)
    : reactor_(reactor),
      options_(std::move(options)),
      methods_(methods),
      log_(make_logger("control")),
      listener_(
          options_.handed_over_fd >= 0
              ? io::UnixListener::adopt_handed_over(options_.handed_over_fd, options_.path)
              : io::UnixListener(options_.path, {.mode = options_.mode, .group = options_.group})) {
    reactor_.watch(listener_.fd(), EPOLLIN, [this](uint32_t) { on_listen_ready(); });
    log_->info("control socket {} (mode {:04o})", options_.path, options_.mode);
}

ControlServer::~ControlServer() {
    reactor_.cancel(reap_timer_);
    reactor_.cancel(sweep_timer_);
    for (auto& c : clients_) {
        reactor_.unwatch(c->fd.get());
    }
    reactor_.unwatch(listener_.fd());
}

void ControlServer::hand_over_listener() {
    if (listener_) {
        reactor_.unwatch(listener_.fd());
        listener_.hand_over();
    }
}

namespace {

// The client's credentials as they were when it connected; none if the
// kernel would not say (then it is no root either).
std::optional<Caller> peer_credentials(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        return std::nullopt;
    }
    return Caller{cred.uid, cred.pid};
}

}  // namespace

bool ControlServer::make_room(bool root) {
    const size_t open = static_cast<size_t>(
        std::count_if(clients_.begin(), clients_.end(), [](const auto& c) { return !c->closing; }));
    if (open < options_.max_clients ||
        (root && open < options_.max_clients + options_.root_reserved_clients)) {
        return true;
    }
    Client* longest_idle = nullptr;
    for (const auto& c : clients_) {
        if (c->idle() && (longest_idle == nullptr || c->last_active < longest_idle->last_active)) {
            longest_idle = c.get();
        }
    }
    if (longest_idle == nullptr) {
        return false;
    }
    close_later(*longest_idle, "the longest-idle control client, to make room for a new one");
    return true;
}

void ControlServer::on_listen_ready() {
    for (;;) {
        UniqueFd fd(::accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                log_->warn("accept: {}", std::strerror(errno));
            }
            return;
        }
        const std::optional<Caller> caller = peer_credentials(fd.get());
        if (!make_room(caller && caller->uid == 0)) {
            log_->warn("refused a control client: {} already connected, none of them idle",
                       options_.max_clients);
            continue;  // `fd` closes: the client sees EOF
        }
        auto client = std::make_unique<Client>();
        client->fd = std::move(fd);
        client->caller = caller;
        client->last_active = Clock::now();
        Client* c = client.get();
        clients_.push_back(std::move(client));
        reactor_.watch(c->fd.get(), EPOLLIN, [this, c](uint32_t ev) { on_client_ready(*c, ev); });
        arm_sweep();
    }
}

void ControlServer::on_client_ready(Client& client, uint32_t events) {
    if (client.closing) {
        return;
    }
    if (events & EPOLLOUT) {
        flush(client);
    }
    if (!client.closing && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        read_requests(client);
    }
}

void ControlServer::read_requests(Client& client) {
    char buf[64 * 1024];
    for (;;) {
        const ssize_t n = ::recv(client.fd.get(), buf, sizeof buf, 0);
        if (n == 0) {
            // The client is done sending; answers already queued still go.
            client.input_done = true;
            flush(client);
            return;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                close_later(client, nullptr);
            }
            return;
        }
        if (client.input.empty()) {
            client.line_started = Clock::now();
        }
        client.input.append(buf, static_cast<size_t>(n));
        size_t start = 0;
        for (size_t nl; (nl = client.input.find('\n', start)) != std::string::npos;
             start = nl + 1) {
            // Before each request, not after the whole read: a read of tiny
            // requests with big answers must not grow the output past the
            // bound before it is looked at.
            if (client.output.size() - client.output_head > options_.max_pending_output) {
                close_later(client, "a client that does not read its answers");
                return;
            }
            std::string_view line(client.input.data() + start, nl - start);
            if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
                continue;  // blank lines are not requests
            }
            client.last_active = Clock::now();
            const CallerScope scope(client.caller);
            if (auto response = methods_.handle_line(line)) {
                client.output += *response;
                client.output += '\n';
            }
        }
        if (start != 0) {
            client.input.erase(0, start);
            client.line_started = Clock::now();  // what is left is a new line
        }
        if (client.input.size() > options_.max_line_bytes) {
            close_later(client, "a request line over the size limit");
            return;
        }
        flush(client);
        if (client.closing) {
            return;
        }
    }
}

void ControlServer::flush(Client& client) {
    while (client.output_head < client.output.size()) {
        const ssize_t n =
            ::send(client.fd.get(), client.output.data() + client.output_head,
                   client.output.size() - client.output_head, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                break;
            }
            close_later(client, nullptr);
            return;
        }
        client.output_head += static_cast<size_t>(n);
    }
    if (client.output_head == client.output.size()) {
        client.output.clear();
        client.output_head = 0;
        if (client.output.capacity() > kKeptOutputCapacity) {
            client.output.shrink_to_fit();  // one big answer must not stay resident
        }
        if (client.input_done) {
            close_later(client, nullptr);
        } else {
            reactor_.modify(client.fd.get(), EPOLLIN);
        }
        return;
    }
    if (client.output.size() - client.output_head > options_.max_pending_output) {
        close_later(client, "a client that does not read its answers");
        return;
    }
    // At EOF only EPOLLOUT: a readable EOF would wake the loop forever.
    reactor_.modify(client.fd.get(), client.input_done ? EPOLLOUT : EPOLLIN | EPOLLOUT);
}

void ControlServer::close_later(Client& client, const char* why) {
    if (why != nullptr) {
        log_->warn("disconnected {}", why);
    }
    client.closing = true;
    reactor_.unwatch(client.fd.get());
    // Called from inside the client's own callback: destroy it later.
    if (reap_timer_ == 0) {
        reap_timer_ = reactor_.schedule(std::chrono::milliseconds(0), [this] {
            reap_timer_ = 0;
            reap();
        });
    }
}

void ControlServer::reap() {
    std::erase_if(clients_, [](const auto& c) { return c->closing; });
}

size_t ControlServer::pending_output_bytes() const {
    size_t total = 0;
    for (const auto& c : clients_) {
        total += c->output.size() - c->output_head;
    }
    return total;
}

void ControlServer::arm_sweep() {
    if (sweep_timer_ == 0) {
        sweep_timer_ = reactor_.schedule(std::chrono::seconds(1), [this] {
            sweep_timer_ = 0;
            sweep();
        });
    }
}

void ControlServer::sweep() {
    const Clock::time_point now = Clock::now();
    for (const auto& c : clients_) {
        if (c->closing) {
            continue;
        }
        if (!c->input.empty() && now - c->line_started > options_.request_timeout) {
            close_later(*c, "a request line left unfinished past the request timeout");
        } else if (c->idle() && now - c->last_active > options_.idle_timeout) {
            close_later(*c, "an idle control client, past the idle timeout");
        }
    }
    if (std::any_of(clients_.begin(), clients_.end(), [](const auto& c) { return !c->closing; })) {
        arm_sweep();
    }
}

}  // namespace vnet::control::rpc
