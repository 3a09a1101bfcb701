#include "control/lifecycle/upgrade/handover_link.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace vnet::control::upgrade {
namespace {

constexpr size_t kMaxFds = 253;             // SCM_MAX_FD
constexpr size_t kMaxDatagram = 64 * 1024;  // far above any message we send

}  // namespace

bool HandoverLink::send(const HandoverMessage& message, std::span<const int> fds) {
    const std::string text = encode_handover(message);
    iovec iov{const_cast<char*>(text.data()), text.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    std::vector<char> control;
    if (!fds.empty()) {
        if (fds.size() > kMaxFds) {
            errno = EINVAL;
            return false;
        }
        control.resize(CMSG_SPACE(fds.size() * sizeof(int)));
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
        std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
    }
    ssize_t n;
    do {
        n = ::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(text.size());
}

std::variant<ReceivedHandover, std::string> HandoverLink::receive(
    std::chrono::milliseconds timeout) {
    pollfd p{socket_.get(), POLLIN, 0};
    int ready;
    do {
        ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) {
        return std::string("poll: ") + std::strerror(errno);
    }
    if (ready == 0) {
        return "timed out after " + std::to_string(timeout.count()) + " ms";
    }
    std::string text(kMaxDatagram, '\0');
    iovec iov{text.data(), text.size()};
    std::vector<char> control(CMSG_SPACE(kMaxFds * sizeof(int)));
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    ssize_t n;
    do {
        n = ::recvmsg(socket_.get(), &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    // A peer that exits with our messages unread resets a SOCK_SEQPACKET
    // socket instead of ending it, and the reset may be reported before
    // what it sent last (a "failed" with its reason): that is read first,
    // and without one the reset means the same as an end.
    if (n < 0 && errno == ECONNRESET) {
        msg.msg_controllen = control.size();
        n = ::recvmsg(socket_.get(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n <= 0) {
            return std::string("closed");
        }
    }
    if (n < 0) {
        return std::string("recvmsg: ") + std::strerror(errno);
    }
    // Owned at once, whatever the message turns out to be.
    std::vector<UniqueFd> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            fds.emplace_back(fd);
        }
    }
    if (n == 0 && fds.empty()) {
        return std::string("closed");
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        return std::string("handover message: truncated");
    }
    text.resize(static_cast<size_t>(n));
    auto decoded = decode_handover(text, fds.size());
    if (auto* error = std::get_if<std::string>(&decoded)) {
        return std::move(*error);
    }
    return ReceivedHandover{std::get<HandoverMessage>(std::move(decoded)), std::move(fds)};
}

}  // namespace vnet::control::upgrade
