// Shared vocabulary of the batched packet I/O in io/: one packet is one
// iovec list (for a tap: the 12-byte virtio_net_hdr, then the frame), taken
// straight from caller memory (guest buffers), never copied here.
#pragma once

#include <sys/uio.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vnet::io {

// One packet: `count` iovecs at `iov`, written or read with one
// writev()/readv() (tun takes exactly one packet per call, §3.1).
struct PacketIov {
    const iovec* iov = nullptr;
    uint32_t count = 0;
};

// How a batch reaches the kernel.
enum class BatchMode : uint8_t {
    io_uring,  // one io_uring_enter for the whole batch
    writev,    // one writev()/readv() per packet; always available
};

std::string_view to_string(BatchMode mode);
std::optional<BatchMode> parse_batch_mode(std::string_view text);

// Results that mean "the fd cannot take this packet now": keep it and wait
// for EPOLLOUT. vhost-net treats the same three as transient (§2.4):
// EAGAIN (non-blocking fd full), ENOBUFS and ENOMEM (allocation failed).
constexpr bool is_would_block(int result) {
    return result == -EAGAIN || result == -ENOBUFS || result == -ENOMEM;
}

// Result of a packet that was not attempted because an earlier packet of the
// batch would have blocked.
inline constexpr int kNotAttempted = -ECANCELED;

}  // namespace vnet::io
