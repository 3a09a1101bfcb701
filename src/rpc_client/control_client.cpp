#include "rpc_client/control_client.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/unix_address.hpp"

namespace vnet::rpc_client {

namespace {

// SO_RCVTIMEO/SO_SNDTIMEO: a blocked recv or send returns EAGAIN after it.
bool set_socket_timeouts(int fd, std::chrono::seconds timeout) {
    const timeval tv{static_cast<time_t>(timeout.count()), 0};
    return ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
           ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0;
}

}  // namespace

ControlClient::ControlClient(const std::string& socket_path, std::chrono::seconds answer_timeout)
    : path_(socket_path), answer_timeout_(answer_timeout) {
    sockaddr_un addr;
    if (!io::make_unix_address(path_, &addr)) {
        throw ControlError("bad control socket path '" + path_ + "'");
    }
    fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd_ || ::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        std::string hint;
        if (err == ENOENT || err == ECONNREFUSED) {
            hint = " (is vnetd running with this --control-socket?)";
        } else if (err == EACCES) {
            hint = " (vnetd's control_socket_group / control_socket_mode decide who may use it)";
        }
        throw ControlError("cannot connect to " + path_ + ": " + std::strerror(err) + hint);
    }
    if (answer_timeout_.count() > 0 && !set_socket_timeouts(fd_.get(), answer_timeout_)) {
        throw ControlError("setting the answer timeout on " + path_ + ": " + std::strerror(errno));
    }
}

ControlTimeout ControlClient::no_answer() const {
    return ControlTimeout("no answer from " + path_ + " within " +
                          std::to_string(answer_timeout_.count()) + " s (vnetd busy or wedged)");
}

nlohmann::json ControlClient::call(const std::string& method, const nlohmann::json& params) {
    const uint64_t id = next_id_++;
    const std::string line =
        nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}
            .dump() +
        "\n";
    for (size_t sent = 0; sent < line.size();) {
        const ssize_t n = ::send(fd_.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw no_answer();  // vnetd does not read its socket
            }
            throw ControlError("sending to " + path_ + ": " + std::strerror(errno));
        }
        sent += static_cast<size_t>(n);
    }
    const nlohmann::json response = nlohmann::json::parse(read_line(), nullptr, false);
    if (response.is_discarded() || !response.is_object() || response.value("id", 0u) != id) {
        throw ControlError("vnetd sent a response that is not JSON-RPC");
    }
    if (auto e = response.find("error"); e != response.end()) {
        throw ControlError(e->value("message", std::string("error")));
    }
    return response.value("result", nlohmann::json());
}

std::string ControlClient::read_line() {
    for (;;) {
        if (size_t nl = buffered_.find('\n'); nl != std::string::npos) {
            std::string line = buffered_.substr(0, nl);
            buffered_.erase(0, nl + 1);
            return line;
        }
        char buf[64 * 1024];
        const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            throw no_answer();
        }
        if (n <= 0) {
            throw ControlError("vnetd closed the control connection" +
                               std::string(n < 0 ? std::string(": ") + std::strerror(errno) : ""));
        }
        buffered_.append(buf, static_cast<size_t>(n));
    }
}

}  // namespace vnet::rpc_client
