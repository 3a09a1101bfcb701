#include "hostile_wire.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "vhost_user/connection.hpp"

namespace vnet::hostile {
namespace {

using Clock = std::chrono::steady_clock;
using vhost_user::MessageHeader;
using vhost_user::Request;

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(left);
}

// Reads and discards what is there. Returns true if the peer is gone.
bool drain_or_eof(int fd) {
    for (;;) {
        char buf[4096];
        union {
            cmsghdr align;
            char bytes[CMSG_SPACE(sizeof(int) * 253)];
        } control{};
        iovec iov{buf, sizeof buf};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.bytes;
        msg.msg_controllen = sizeof control.bytes;
        ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return !(errno == EAGAIN || errno == EWOULDBLOCK);
        }
        // A back end has no business sending fds; close any it does.
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; ++i) {
                    int raw;
                    std::memcpy(&raw, CMSG_DATA(c) + i * sizeof(int), sizeof raw);
                    ::close(raw);
                }
            }
        }
        if (n == 0) {
            return true;
        }
    }
}

// Shared mappings: guest memory and memfds are MAP_SHARED; the allocator's
// (and a sanitizer's) own mappings are private and come and go.
long count_shared_mappings(const std::string& maps_path) {
    std::ifstream in(maps_path);
    if (!in) {
        return -1;
    }
    long shared = 0;
    std::string line;
    while (std::getline(in, line)) {
        // "start-end perms offset dev inode path": perms is "rw-s" or "rw-p".
        const size_t space = line.find(' ');
        if (space != std::string::npos && space + 4 < line.size() && line[space + 4] == 's') {
            ++shared;
        }
    }
    return shared;
}

}  // namespace

void say(const char* format, ...) {
    std::va_list args;
    va_start(args, format);
    std::fputs("vnet-hostile: ", stdout);
    std::vfprintf(stdout, format, args);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    va_end(args);
}

UniqueFd connect_once(const std::string& path, bool nonblocking, int* err) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        *err = ENAMETOOLONG;
        return UniqueFd();
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    UniqueFd fd(
        ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0));
    if (!fd) {
        *err = errno;
        return fd;
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        *err = errno;
        return UniqueFd();
    }
    *err = 0;
    return fd;
}

UniqueFd connect_admitted(const std::string& path, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int last_err = 0;
    unsigned turned_away = 0;
    for (;;) {
        UniqueFd fd = connect_once(path, false, &last_err);
        if (fd) {
            // A full server accepts and closes at once, which looks like a
            // successful connect: only an answer proves we were admitted.
            // GET_FEATURES is harmless at any point of a session.
            vhost_user::Message reply;
            if (send_request(fd.get(), Request::get_features, false, nullptr, 0) &&
                vhost_user::receive_message(fd.get(), reply, std::chrono::milliseconds(2000)) ==
                    vhost_user::ReceiveResult::message &&
                reply.request() == Request::get_features) {
                if (turned_away != 0) {
                    say("admitted after %u turned-away attempt(s)", turned_away);
                }
                return fd;
            }
            ++turned_away;
            last_err = ECONNRESET;
        }
        if (Clock::now() >= deadline) {
            throw std::runtime_error("cannot get a connection to " + path + ": " +
                                     std::strerror(last_err));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

bool send_bytes(int fd, const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (len > 0) {
        ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                pollfd w{fd, POLLOUT, 0};
                if (::poll(&w, 1, 5000) <= 0) {
                    errno = ETIMEDOUT;
                    return false;
                }
                continue;
            }
            return false;
        }
        p += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

bool send_request(int fd, Request request, bool need_reply, const void* payload, uint32_t size,
                  std::span<const int> fds) {
    const uint32_t flags =
        MessageHeader::kVersion | (need_reply ? MessageHeader::kFlagNeedReply : 0);
    return send_request_raw(fd, static_cast<uint32_t>(request), flags, payload, size, fds);
}

bool send_request_raw(int fd, uint32_t request, uint32_t flags, const void* payload, uint32_t size,
                      std::span<const int> fds) {
    MessageHeader header{request, flags, size};
    std::vector<uint8_t> bytes(sizeof header + size);
    std::memcpy(bytes.data(), &header, sizeof header);
    if (size > 0) {
        std::memcpy(bytes.data() + sizeof header, payload, size);
    }
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    iovec iov{bytes.data(), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n;
    do {
        n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno != EAGAIN) {
            return false;
        }
        n = 0;  // non-blocking socket, full: the rest goes without fds
    }
    // The fds went with the first byte; the rest is plain data.
    return send_bytes(fd, bytes.data() + n, bytes.size() - static_cast<size_t>(n));
}

uint64_t read_ack(int fd, Request request, std::chrono::milliseconds timeout) {
    vhost_user::Message reply;
    const vhost_user::ReceiveResult r = vhost_user::receive_message(fd, reply, timeout);
    const char* name = vhost_user::to_string(request);
    if (r != vhost_user::ReceiveResult::message) {
        throw BackendMisbehaved(std::string("no acknowledgement for ") + name + ": " +
                                vhost_user::to_string(r));
    }
    uint64_t status = 0;
    if (reply.request() != request || reply.header.flags != vhost_user::kReplyFlags ||
        reply.fd_count != 0 || !reply.read_payload(status)) {
        throw BackendMisbehaved(std::string("malformed acknowledgement for ") + name +
                                " (request " + std::to_string(reply.header.request) + ", flags " +
                                std::to_string(reply.header.flags) + ", size " +
                                std::to_string(reply.header.size) + ")");
    }
    return status;
}

void require_refused(int fd, Request request, const void* payload, uint32_t size,
                     std::span<const int> fds, const char* what) {
    if (!send_request(fd, request, true, payload, size, fds)) {
        throw BackendMisbehaved(std::string("connection gone before ") + what + ": " +
                                std::strerror(errno));
    }
    const uint64_t status = read_ack(fd, request, std::chrono::milliseconds(3000));
    if (status == 0) {
        throw BackendMisbehaved(std::string("back end accepted ") + what);
    }
    say("refused as it must be (ack status %llu): %s", static_cast<unsigned long long>(status),
        what);
}

bool wait_for_close(int fd, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        pollfd p{fd, POLLIN | POLLRDHUP, 0};
        int r = ::poll(&p, 1, remaining_ms(deadline));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        if (drain_or_eof(fd)) {
            return true;
        }
        if ((p.revents & (POLLHUP | POLLERR)) != 0) {
            return true;
        }
        if (Clock::now() >= deadline) {
            return false;
        }
    }
}

void require_drop(int fd, const char* after, std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    if (wait_for_close(fd, timeout)) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
        say("connection closed by back end after %s (%lld ms)", after,
            static_cast<long long>(ms.count()));
        return;
    }
    say("connection still open %lld ms after %s: sending one GET_FEATURES probe",
        static_cast<long long>(timeout.count()), after);
    if (!send_request(fd, Request::get_features, false, nullptr, 0)) {
        say("connection closed by back end after %s (probe send failed: %s)", after,
            std::strerror(errno));
        return;
    }
    vhost_user::Message reply;
    const auto r = vhost_user::receive_message(fd, reply, std::chrono::milliseconds(3000));
    if (r == vhost_user::ReceiveResult::message) {
        throw BackendMisbehaved(std::string("back end still answers GET_FEATURES after ") + after);
    }
    if (r == vhost_user::ReceiveResult::timed_out) {
        throw BackendMisbehaved(std::string("back end neither dropped nor answered after ") +
                                after);
    }
    say("connection closed by back end after the probe that followed %s (%s)", after,
        vhost_user::to_string(r));
}

namespace {

long count_fds_once(int pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/fd";
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) {
        return -1;
    }
    long n = 0;
    while (const dirent* e = ::readdir(dir)) {
        if (e->d_name[0] != '.') {
            ++n;
        }
    }
    ::closedir(dir);
    return n;
}

// The least of a few samples: the daemon opens files for a moment now and
// then (its stats file, every second), which is not what we look for.
long steady(long (*sample)(int), int pid) {
    long least = sample(pid);
    for (int i = 0; i < 5; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const long n = sample(pid);
        if (n >= 0 && (least < 0 || n < least)) {
            least = n;
        }
    }
    return least;
}

long count_shared_maps_once(int pid) {
    return count_shared_mappings("/proc/" + std::to_string(pid) + "/maps");
}

}  // namespace

long count_fds(int pid) {
    return steady(count_fds_once, pid);
}

long count_shared_maps(int pid) {
    return steady(count_shared_maps_once, pid);
}

}  // namespace vnet::hostile
