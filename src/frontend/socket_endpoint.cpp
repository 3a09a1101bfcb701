#include "frontend/socket_endpoint.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

namespace vnet::frontend {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_errno(int err, const std::string& what) {
    throw std::system_error(err, std::generic_category(), what);
}

sockaddr_un make_address(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
        throw_errno(ENAMETOOLONG, "vhost-user socket path '" + path + "'");
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

UniqueFd make_socket() {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) {
        throw_errno(errno, "socket(AF_UNIX)");
    }
    return fd;
}

}  // namespace

UniqueFd connect_unix_socket(const std::string& path, std::chrono::milliseconds timeout) {
    const sockaddr_un addr = make_address(path);
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        UniqueFd fd = make_socket();
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
            return fd;
        }
        const int err = errno;
        // A back end that is still starting has no socket file yet, or has
        // one but is not listening: both are worth waiting for.
        const bool retry = err == ENOENT || err == ECONNREFUSED || err == EAGAIN;
        if (!retry || Clock::now() >= deadline) {
            throw_errno(err, "connect to " + path);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

UniqueFd accept_unix_socket(const std::string& path, std::chrono::milliseconds timeout) {
    const sockaddr_un addr = make_address(path);
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        ::unlink(path.c_str());  // left over from an earlier run; never unlink anything else
    }
    UniqueFd listener = make_socket();
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        throw_errno(errno, "bind " + path);
    }
    if (::listen(listener.get(), 1) != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        throw_errno(err, "listen " + path);
    }
    pollfd p{listener.get(), POLLIN, 0};
    // EINTR is not retried: it means SIGINT/SIGTERM, and the user wants out.
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    const int poll_errno = errno;
    UniqueFd conn;
    if (ready > 0) {
        conn.reset(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    }
    const int accept_errno = errno;
    ::unlink(path.c_str());
    if (ready < 0) {
        throw_errno(poll_errno, "poll " + path);
    }
    if (ready == 0) {
        throw_errno(ETIMEDOUT, "no back end connected to " + path);
    }
    if (!conn) {
        throw_errno(accept_errno, "accept " + path);
    }
    return conn;
}

}  // namespace vnet::frontend
