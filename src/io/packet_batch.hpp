// Shared vocabulary of the batched packet I/O in io/. A batch is a
// packet::PacketBurst: packet i is burst.packet_iovecs(i) (for a tap: the
// virtio_net_hdr, then the frame), written or read with one call, straight
// from caller memory (guest buffers), never copied here.
#pragma once

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vnet::io {

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
