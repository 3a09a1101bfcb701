#include "vhost_user/connection.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace vnet::vhost_user {
namespace {

constexpr size_t kHeaderSize = sizeof(MessageHeader);
constexpr std::chrono::milliseconds kSendTimeout{5000};

// Control buffer for exactly kMaxFdsPerMessage fds: anything more sets
// MSG_CTRUNC, which we treat as an error.
union ControlBuffer {
    cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
};

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Waits for `events` on fd until the deadline. Returns >0 ready, 0 timeout, <0 error.
int wait_for(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        int r = ::poll(&p, 1, remaining_ms(deadline));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        return r;
    }
}

}  // namespace

const char* to_string(ReceiveResult r) {
    switch (r) {
        case ReceiveResult::message:
            return "message";
        case ReceiveResult::need_more:
            return "need more";
        case ReceiveResult::peer_closed:
            return "peer closed the connection";
        case ReceiveResult::timed_out:
            return "timed out";
        case ReceiveResult::bad_version:
            return "header version is not 1";
        case ReceiveResult::payload_too_large:
            return "payload larger than 4096 bytes";
        case ReceiveResult::too_many_fds:
            return "more than 8 fds in one message";
        case ReceiveResult::fds_truncated:
            return "ancillary data truncated (MSG_CTRUNC)";
        case ReceiveResult::io_error:
            return "socket error";
    }
    return "unknown receive result";
}

void Message::close_fds() {
    for (size_t i = 0; i < fd_count; ++i) {
        fds[i].reset();
    }
    fd_count = 0;
}

size_t Message::raw_fds(std::array<int, kMaxFdsPerMessage>& out) const {
    for (size_t i = 0; i < fd_count; ++i) {
        out[i] = fds[i].get();
    }
    return fd_count;
}

void MessageReader::reset() {
    partial_.close_fds();
    partial_.header = {};
    header_bytes_ = 0;
    payload_bytes_ = 0;
}

// One recvmsg into [dst, dst+len). Returns `message` when at least one byte
// arrived (*got bytes), need_more on EAGAIN, or an error. Fds that arrive are
// wrapped at once, so every error path closes them.
ReceiveResult MessageReader::receive_into(int fd, uint8_t* dst, size_t len, size_t* got) {
    iovec iov{dst, len};
    ControlBuffer control{};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof(control.bytes);

    ssize_t n;
    do {
        n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return ReceiveResult::need_more;
        }
        // A peer that closes with our last message still unread in its
        // socket resets the stream instead of ending it: it hung up all
        // the same (seen when a device breaks as a request is in flight).
        if (errno == ECONNRESET) {
            return ReceiveResult::peer_closed;
        }
        last_errno_ = errno;
        return ReceiveResult::io_error;
    }

    bool too_many = false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const uint8_t* data = CMSG_DATA(c);
        for (size_t i = 0; i < count; ++i) {
            int raw;
            std::memcpy(&raw, data + i * sizeof(int), sizeof(int));
            UniqueFd owned(raw);
            if (partial_.fd_count < kMaxFdsPerMessage) {
                partial_.fds[partial_.fd_count++] = std::move(owned);
            } else {
                too_many = true;  // `owned` closes it
            }
        }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
        return ReceiveResult::fds_truncated;
    }
    if (too_many) {
        return ReceiveResult::too_many_fds;
    }
    if (n == 0) {
        return ReceiveResult::peer_closed;
    }
    *got = static_cast<size_t>(n);
    return ReceiveResult::message;
}

ReceiveResult MessageReader::read(int fd, Message& out) {
    for (;;) {
        const bool header_done = header_bytes_ == kHeaderSize;
        if (header_done && payload_bytes_ == partial_.header.size) {
            out = std::move(partial_);
            partial_ = Message{};
            header_bytes_ = 0;
            payload_bytes_ = 0;
            return ReceiveResult::message;
        }
        // Read exactly what this message still needs, never into the next
        // one: its fds must not be attributed to this message.
        uint8_t* dst;
        size_t want;
        if (!header_done) {
            dst = reinterpret_cast<uint8_t*>(&partial_.header) + header_bytes_;
            want = kHeaderSize - header_bytes_;
        } else {
            dst = partial_.payload.data() + payload_bytes_;
            want = partial_.header.size - payload_bytes_;
        }
        size_t got = 0;
        ReceiveResult r = receive_into(fd, dst, want, &got);
        if (r == ReceiveResult::need_more) {
            return r;
        }
        if (r != ReceiveResult::message) {
            reset();
            return r;
        }
        if (header_done) {
            payload_bytes_ += got;
            continue;
        }
        header_bytes_ += got;
        if (header_bytes_ < kHeaderSize) {
            continue;
        }
        // vhost-user.rst "Header": version bits must be 0x1.
        if ((partial_.header.flags & MessageHeader::kVersionMask) != MessageHeader::kVersion) {
            reset();
            return ReceiveResult::bad_version;
        }
        // Hostile-input rule 6: a size we refuse is never allocated.
        if (partial_.header.size > kMaxPayloadSize) {
            reset();
            return ReceiveResult::payload_too_large;
        }
    }
}

bool send_message(int fd, Request request, uint32_t flags, const void* payload, uint32_t size,
                  std::span<const int> fds) {
    if (size > kMaxPayloadSize || fds.size() > kMaxFdsPerMessage ||
        (size > 0 && payload == nullptr)) {
        errno = EINVAL;
        return false;
    }
    MessageHeader header{static_cast<uint32_t>(request), flags, size};
    iovec iov[2] = {{&header, kHeaderSize}, {const_cast<void*>(payload), size}};
    ControlBuffer control{};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = size > 0 ? 2 : 1;
    if (!fds.empty()) {
        msg.msg_control = control.bytes;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }

    const auto deadline = Clock::now() + kSendTimeout;
    size_t left = kHeaderSize + size;
    while (left > 0) {
        ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int w = wait_for(fd, POLLOUT, deadline);
                if (w <= 0) {
                    if (w == 0) {
                        errno = ETIMEDOUT;
                    }
                    return false;
                }
                continue;
            }
            return false;
        }
        left -= static_cast<size_t>(n);
        // The fds went with the first byte; the rest is plain data.
        msg.msg_control = nullptr;
        msg.msg_controllen = 0;
        size_t advance = static_cast<size_t>(n);
        while (advance > 0 && msg.msg_iovlen > 0) {
            if (advance >= msg.msg_iov[0].iov_len) {
                advance -= msg.msg_iov[0].iov_len;
                ++msg.msg_iov;
                --msg.msg_iovlen;
            } else {
                msg.msg_iov[0].iov_base = static_cast<uint8_t*>(msg.msg_iov[0].iov_base) + advance;
                msg.msg_iov[0].iov_len -= advance;
                advance = 0;
            }
        }
    }
    return true;
}

bool send_message(int fd, const Message& msg) {
    std::array<int, kMaxFdsPerMessage> raw{};
    size_t count = msg.raw_fds(raw);
    uint32_t size = msg.header.size <= kMaxPayloadSize ? msg.header.size : kMaxPayloadSize + 1;
    return send_message(fd, msg.request(), msg.header.flags, msg.payload.data(), size,
                        std::span<const int>(raw.data(), count));
}

ReceiveResult receive_message(int fd, Message& out, std::chrono::milliseconds timeout) {
    MessageReader reader;
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        ReceiveResult r = reader.read(fd, out);
        if (r != ReceiveResult::need_more) {
            return r;
        }
        int w = wait_for(fd, POLLIN, deadline);
        if (w == 0) {
            return ReceiveResult::timed_out;
        }
        if (w < 0) {
            return ReceiveResult::io_error;
        }
    }
}

}  // namespace vnet::vhost_user
