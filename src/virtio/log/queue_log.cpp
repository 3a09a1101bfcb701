#include "virtio/log/queue_log.hpp"

#include <algorithm>

namespace vnet::virtio {

void QueueLog::mark_buffer(std::span<const iovec> iov, uint64_t bytes) {
    for (const iovec& v : iov) {
        if (bytes == 0) {
            return;
        }
        const uint64_t n = std::min<uint64_t>(v.iov_len, bytes);
        const auto* p = static_cast<const uint8_t*>(v.iov_base);
        // A lent iovec never spans regions (gpa_to_iovecs splits at their
        // edges), so one lookup gives the whole piece's address.
        if (const GuestRegion* r = memory_->find_host(p, &region_hint_); r != nullptr) {
            log_->mark(r->guest_phys_addr + static_cast<uint64_t>(p - r->host_addr), n);
        }
        bytes -= n;
    }
}

}  // namespace vnet::virtio
