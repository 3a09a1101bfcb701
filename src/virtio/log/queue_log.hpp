// QueueLog: one queue's side of the dirty log. The queue marks, after
// writing, what it wrote into guest memory:
//   - the guest's buffers it filled (RX), given as the host iovecs the ring
//     lent it; each is translated back to its guest-physical address;
//   - the ring memory the device writes (split: the used ring, flags, idx
//     and avail_event, at the address SET_VRING_ADDR gave for logging;
//     packed: the descriptor ring, where used descriptors go, and the device
//     event suppression area).
// A ring's own areas are marked whole once per publish, not entry by entry:
// a few bits per burst, paid only while the front end logs.
//
// Inactive (no log) unless the front end turned logging on; the queue asks
// active() once per publish or filled buffer, never per byte.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "virtio/guest_memory.hpp"
#include "virtio/log/dirty_log.hpp"

namespace vnet::virtio {

// The guest-physical ranges of a ring's device-written areas.
struct RingLogAreas {
    struct Range {
        uint64_t gpa = 0;
        uint64_t len = 0;  // 0: unused
    };
    std::array<Range, 2> ranges{};
};

class QueueLog {
public:
    QueueLog() = default;
    // `log` and `memory` outlive the queue's run (the port holds both).
    QueueLog(const DirtyLog* log, const GuestMemoryMap* memory, RingLogAreas areas)
        : log_(log), memory_(memory), areas_(areas) {}

    bool active() const { return log_ != nullptr; }

    // The ring's device-written areas.
    void mark_ring() const {
        for (const RingLogAreas::Range& r : areas_.ranges) {
            log_->mark(r.gpa, r.len);
        }
    }
    // The first `bytes` of a buffer lent as `iov` (host addresses inside
    // this queue's memory map).
    void mark_buffer(std::span<const iovec> iov, uint64_t bytes);

private:
    const DirtyLog* log_ = nullptr;
    const GuestMemoryMap* memory_ = nullptr;
    RingLogAreas areas_{};
    size_t region_hint_ = 0;
};

}  // namespace vnet::virtio
