// vhost-user message codec with fd passing, shared by the back end
// (vhost_user/) and the front end (frontend/).
//
// Contract:
// - A Message is one framed vhost-user message: the 12-byte header, a payload
//   of header.size bytes (at most kMaxPayloadSize, held inline: a size from
//   the peer never drives an allocation) and the fds that came with it
//   (at most kMaxFdsPerMessage, each owned by a UniqueFd, so every error path
//   closes them).
// - MessageReader reads one message at a time from a socket without ever
//   blocking (MSG_DONTWAIT): a message that arrives in pieces is reassembled
//   across calls; until it is complete, read() returns need_more and keeps
//   the partial state. Fds received at any point while a message is read
//   belong to that message. A control-message truncation (MSG_CTRUNC) or more
//   than 8 fds is an error, as are a wrong version and an oversized payload:
//   after any error the stream is out of sync and the connection must close.
// - send_message / receive_message are the blocking pair for a front end
//   (and tests): send_message writes a whole message (SCM_RIGHTS, never
//   SIGPIPE); receive_message waits at most `timeout` for one whole message.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "common/unique_fd.hpp"
#include "vhost_user/message.hpp"

namespace vnet::vhost_user {

// Reply headers carry exactly version 1 | REPLY; QEMU rejects anything else
// (vhost_user_read_header).
inline constexpr uint32_t kReplyFlags = MessageHeader::kVersion | MessageHeader::kFlagReply;
static_assert(kReplyFlags == 0x5);

struct Message {
    MessageHeader header{};
    std::array<uint8_t, kMaxPayloadSize> payload{};
    std::array<UniqueFd, kMaxFdsPerMessage> fds{};
    size_t fd_count = 0;

    Request request() const { return static_cast<Request>(header.request); }
    uint32_t size() const { return header.size; }
    bool needs_reply() const { return (header.flags & MessageHeader::kFlagNeedReply) != 0; }
    bool is_reply() const { return (header.flags & MessageHeader::kFlagReply) != 0; }
    std::span<const uint8_t> payload_bytes() const { return {payload.data(), header.size}; }

    // Copies the payload into `out` if it is exactly sizeof(T) bytes.
    template <class T>
    bool read_payload(T& out) const {
        static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kMaxPayloadSize);
        if (header.size != sizeof(T)) {
            return false;
        }
        std::memcpy(&out, payload.data(), sizeof(T));
        return true;
    }
    // Sets the payload to `value` (header.size = sizeof(T)).
    template <class T>
    void write_payload(const T& value) {
        static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kMaxPayloadSize);
        std::memcpy(payload.data(), &value, sizeof(T));
        header.size = sizeof(T);
    }

    // Takes ownership of fd number `i` (i < fd_count); the slot becomes empty.
    UniqueFd take_fd(size_t i) { return std::move(fds[i]); }
    // Closes every fd still attached.
    void close_fds();
    // Raw fd numbers, for sending.
    size_t raw_fds(std::array<int, kMaxFdsPerMessage>& out) const;
};

enum class ReceiveResult : uint8_t {
    message,            // `out` holds one complete message
    need_more,          // nothing more to read now; partial state is kept
    peer_closed,        // EOF or ECONNRESET (possibly in the middle of a message)
    timed_out,          // receive_message only
    bad_version,        // header flags version != 1
    payload_too_large,  // header size > kMaxPayloadSize
    too_many_fds,       // more than 8 fds for one message
    fds_truncated,      // MSG_CTRUNC: the kernel dropped fds or control data
    io_error,           // recvmsg/poll failed (errno kept in MessageReader::last_errno)
};
const char* to_string(ReceiveResult r);

class MessageReader {
public:
    // Reads from a stream socket without blocking. Returns `message` with the
    // completed message moved into `out` (its previous contents are replaced),
    // need_more when the socket has no more bytes for now, or an error.
    ReceiveResult read(int fd, Message& out);

    // True if part of a message has been read and the rest is awaited.
    bool has_partial() const { return header_bytes_ > 0; }
    int last_errno() const { return last_errno_; }

private:
    ReceiveResult receive_into(int fd, uint8_t* dst, size_t len, size_t* got);
    void reset();

    Message partial_{};
    size_t header_bytes_ = 0;
    size_t payload_bytes_ = 0;
    int last_errno_ = 0;
};

// Writes the whole message: header {request, flags, size}, then `size` payload
// bytes, with `fds` attached (SCM_RIGHTS) to the first byte. `flags` are sent
// verbatim: include MessageHeader::kVersion. Uses MSG_NOSIGNAL; on a
// non-blocking socket it waits (poll, up to 5 s in total) for room. Returns
// false (errno set) if size > kMaxPayloadSize, fds.size() > 8, or the peer
// is gone.
bool send_message(int fd, Request request, uint32_t flags, const void* payload, uint32_t size,
                  std::span<const int> fds);

// Sends `msg` (header as given, payload_bytes(), its fds). Same rules.
bool send_message(int fd, const Message& msg);

// Waits up to `timeout` for one complete message on `fd` (blocking or not).
// Returns message, timed_out, peer_closed or an error; on anything but
// `message`, `out` is unspecified and the fds read so far are closed.
ReceiveResult receive_message(int fd, Message& out, std::chrono::milliseconds timeout);

}  // namespace vnet::vhost_user
