// Collects one chain's buffers into the caller's iovecs and enforces the
// rules that do not depend on the ring format: readable before writable,
// total length under 2^32, every byte mapped, and the caller's iovec budget
// (a buffer spanning guest memory regions becomes one iovec per region).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <span>

#include "virtio/guest_memory.hpp"
#include "virtio/ring/device_ring.hpp"
#include "virtio/ring/pop_status.hpp"

namespace vnet::virtio {

// Why gpa_to_iovecs refused a buffer: `buffer_unmapped` if a byte of it is
// not guest memory (or it wraps past 2^64), else `too_many_segments` (it
// needs more iovecs than were left). Cold: only a failed pop asks.
[[gnu::cold, gnu::noinline]] PopStatus classify_buffer_failure(const GuestMemoryMap& memory,
                                                               uint64_t gpa, uint64_t len);

class ChainSegments {
public:
    ChainSegments(std::span<iovec> out, const GuestMemoryMap& memory, size_t* region_hint)
        : out_(out.first(std::min<size_t>(out.size(), UINT16_MAX))),  // counts are 16-bit
          memory_(memory),
          hint_(region_hint) {}

    // Appends one buffer. A zero-length one adds no iovec but still counts
    // for the readable/writable order.
    PopStatus add(uint64_t addr, uint32_t len, bool writable);

    // Fills the segment and byte counts of `chain` (not id or slots).
    void finish(PoppedChain& chain) const;

private:
    std::span<iovec> out_;
    const GuestMemoryMap& memory_;
    size_t* hint_;
    size_t segments_ = 0;
    uint64_t total_bytes_ = 0;
    size_t readable_segments_ = 0;
    uint64_t readable_bytes_ = 0;
    bool seen_writable_ = false;
};

}  // namespace vnet::virtio
