#include "virtio/net/rx_window.hpp"

#include <algorithm>
#include <cstddef>

#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "virtio/net_header.hpp"

namespace vnet::virtio {

uint16_t RxWindow::commit_heads(uint32_t len, bool mergeable, bool write_num_buffers) {
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
        write_num_buffers_of(heads_[pos_], used_heads);
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

void RxWindow::drop_filled() {
    taken_ = 0;
    if (pos_ == 0) {
        return;
    }
    const uint16_t keep = static_cast<uint16_t>(count_ - pos_);
    if (keep == 0) {
        count_ = 0;
        pos_ = 0;
        staged_ = 0;
        iovecs_used_ = 0;
        return;
    }
    const uint16_t iov_from = heads_[pos_].first_iov;
    const auto iov_keep = static_cast<uint16_t>(iovecs_used_ - iov_from);
    std::copy_n(iovecs_.begin() + iov_from, iov_keep, iovecs_.begin());
    for (uint16_t i = 0; i < keep; ++i) {
        Head h = heads_[pos_ + i];
        h.first_iov = static_cast<uint16_t>(h.first_iov - iov_from);
        heads_[i] = h;
    }
    count_ = keep;
    pos_ = 0;
    staged_ = 0;
    iovecs_used_ = iov_keep;
}

}  // namespace vnet::virtio
