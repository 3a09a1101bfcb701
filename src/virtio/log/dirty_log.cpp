#include "virtio/log/dirty_log.hpp"

#include <algorithm>

namespace vnet::virtio {

void DirtyLog::mark(uint64_t gpa, uint64_t len) const {
    if (len == 0) {
        return;
    }
    const uint64_t first = gpa / kPageSize;
    // A range that wraps past 2^64 cannot be guest memory: count it, mark nothing.
    if (gpa + (len - 1) < gpa) [[unlikely]] {
        pages_beyond_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const uint64_t last = (gpa + (len - 1)) / kPageSize;
    const uint64_t pages_covered = size_bytes_ * 8;
    if (last >= pages_covered) [[unlikely]] {
        const uint64_t beyond_from = std::max(first, pages_covered);
        pages_beyond_.fetch_add(last - beyond_from + 1, std::memory_order_relaxed);
        if (first >= pages_covered) {
            return;
        }
    }
    const uint64_t end = std::min(last, pages_covered - 1);
    for (uint64_t page = first; page <= end;) {
        const uint64_t byte = page / 8;
        // Every page of [page, end] in this byte at once.
        const uint64_t in_byte = std::min<uint64_t>(end - page + 1, 8 - page % 8);
        const auto bits = static_cast<uint8_t>(((1u << in_byte) - 1) << (page % 8));
        // release: our writes to the page are visible before the bit that
        // tells the front end to copy it (vhost_log_write's smp_wmb).
        std::atomic_ref<uint8_t>(bitmap_[byte]).fetch_or(bits, std::memory_order_release);
        page += in_byte;
    }
}

}  // namespace vnet::virtio
