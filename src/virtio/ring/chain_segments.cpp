#include "virtio/ring/chain_segments.hpp"

#include <algorithm>

namespace vnet::virtio {

PopStatus classify_buffer_failure(const GuestMemoryMap& memory, uint64_t gpa, uint64_t len) {
    if (gpa + len < gpa) {
        return PopStatus::buffer_unmapped;
    }
    while (len > 0) {
        const GuestRegion* r = memory.find_gpa(gpa);
        if (r == nullptr) {
            return PopStatus::buffer_unmapped;
        }
        const uint64_t piece = std::min(len, r->gpa_end() - gpa);
        gpa += piece;
        len -= piece;
    }
    return PopStatus::too_many_segments;
}

PopStatus ChainSegments::add(uint64_t addr, uint32_t len, bool writable) {
    // virtio 1.2 §2.8.17 / §2.7.4.2: device-writable elements come after all device-readable ones
    if (!writable && seen_writable_) [[unlikely]] {
        return PopStatus::readable_after_writable;
    }
    if (writable && !seen_writable_) {
        seen_writable_ = true;
        readable_segments_ = segments_;
        readable_bytes_ = total_bytes_;
    }
    total_bytes_ += len;
    // virtio 1.2 §2.7.5.2: a chain longer than 2^32 bytes is illegal (used len is 32 bits)
    if (total_bytes_ > UINT32_MAX) [[unlikely]] {
        return PopStatus::total_length_overflow;
    }
    // CVE-2018-1059 class: a buffer may span regions (one iovec each) but every byte is mapped
    if (!memory_.gpa_to_iovecs(addr, len, out_, &segments_, hint_)) [[unlikely]] {
        return classify_buffer_failure(memory_, addr, len);
    }
    return PopStatus::ok;
}

void ChainSegments::finish(PoppedChain& chain) const {
    const size_t readable = seen_writable_ ? readable_segments_ : segments_;
    const uint64_t readable_bytes = seen_writable_ ? readable_bytes_ : total_bytes_;
    // Both fit: out_ was capped at UINT16_MAX entries, total_bytes_ at UINT32_MAX.
    chain.readable_segments = static_cast<uint16_t>(readable);
    chain.writable_segments = static_cast<uint16_t>(segments_ - readable);
    chain.readable_bytes = static_cast<uint32_t>(readable_bytes);
    chain.writable_bytes = static_cast<uint32_t>(total_bytes_ - readable_bytes);
}

}  // namespace vnet::virtio
