#include "virtio/net/rx_window.hpp"

#include <algorithm>
#include <cstddef>

#include "virtio/net_header.hpp"

namespace vnet::virtio {

namespace {

// Writes `value` (little-endian u16) at byte `offset` of the bytes the
// iovecs describe; the header may be split over tiny buffers by a guest.
void write_u16_at(std::span<const iovec> iov, size_t offset, uint16_t value) {
    const uint8_t bytes[2] = {static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8)};
    size_t written = 0;
    for (const iovec& v : iov) {
        while (written < 2 && offset < v.iov_len) {
            static_cast<uint8_t*>(v.iov_base)[offset++] = bytes[written++];
        }
        if (written == 2) {
            return;
        }
        offset -= std::min(offset, v.iov_len);
    }
}

}  // namespace

uint16_t RxWindow::commit(uint32_t len, bool mergeable, bool write_num_buffers) {
    // How many of the lent heads the packet really filled.
    uint16_t used_heads = 1;
    if (mergeable) {
        uint64_t bytes = heads_[pos_].bytes;
        while (bytes < len && used_heads < taken_) {
            bytes += heads_[pos_ + used_heads].bytes;
            ++used_heads;
        }
    }
    if (write_num_buffers) {
        // virtio 1.2 §5.1.6.4: num_buffers is the number of buffers the packet spans.
        const std::span<const iovec> header(iovecs_.data() + heads_[pos_].first_iov,
                                            size_t{iovecs_used_} - heads_[pos_].first_iov);
        write_u16_at(header, offsetof(NetHeader, num_buffers), used_heads);
    }
    uint32_t remaining = len;
    for (uint16_t i = 0; i < used_heads; ++i) {
        Head& h = heads_[pos_ + i];
        h.filled = std::min(remaining, h.bytes);  // staged at flush (stage_used)
        remaining -= h.filled;
    }
    pos_ = static_cast<uint16_t>(pos_ + used_heads);
    taken_ = 0;
    return used_heads;
}

}  // namespace vnet::virtio
