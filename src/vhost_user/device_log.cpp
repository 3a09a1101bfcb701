// VhostUserDevice and live migration (vhost-user.rst "Migration"): the dirty
// log's memory (SET_LOG_BASE), turning logging on and off (LOG_ALL in
// SET_FEATURES, the LOG flag of SET_VRING_ADDR), and what each ring marks.
//
// QEMU's sequence on the source: SET_LOG_BASE with the log's fd, then
// SET_FEATURES with LOG_ALL and SET_VRING_ADDR with LOG on every ring, each
// waiting for its reply; at the end GET_VRING_BASE stops the rings, and
// SET_FEATURES without LOG_ALL turns it off again if the migration failed.
// A change restarts the ready rings (as a new memory table does), so a
// worker never marks a log that is being replaced.
#include <fcntl.h>

#include "vhost_user/device.hpp"
#include "vhost_user/memory_region.hpp"

namespace vnet::vhost_user {
namespace {

// The guest-physical address of a front-end virtual address, if mapped.
uint64_t area_address(const VringAddr& a, virtio::RingArea area) {
    switch (area) {
        case virtio::RingArea::desc:
            return a.desc_user_addr;
        case virtio::RingArea::driver:
            return a.avail_user_addr;
        case virtio::RingArea::device:
            return a.used_user_addr;
    }
    return a.used_user_addr;  // unreachable
}

std::optional<uint64_t> uva_to_gpa(const virtio::GuestMemoryMap& memory, uint64_t uva) {
    const virtio::GuestRegion* r = memory.find_uva(uva);
    if (r == nullptr) {
        return std::nullopt;
    }
    return r->guest_phys_addr + (uva - r->user_addr);
}

uint64_t highest_guest_address(const virtio::GuestMemoryMap& memory) {
    uint64_t end = 0;
    for (const virtio::GuestRegion& r : memory.regions()) {
        end = std::max(end, r.gpa_end());
    }
    return end;
}

}  // namespace

MessageError VhostUserDevice::handle_set_log_base(Message& m, Message&) {
    LogBase base;
    m.read_payload(base);
    // Hostile-input rule 4: a log the front end could shrink would fault
    // every mark (and lose it). QEMU seals its own, so the rule is the
    // inflight buffer's: F_SEAL_SHRINK, or no log. A file that cannot be
    // sealed (F_GET_SEALS fails; anything but a memfd) cannot promise it.
    // Seals are never removed, so the answer holds for the log's life.
    const int seals = ::fcntl(m.fds[0].get(), F_GET_SEALS);
    if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
        log_->warn("dirty log fd refused: {}",
                   seals < 0 ? "it cannot be sealed, so nothing keeps it from shrinking"
                             : "its seals lack F_SEAL_SHRINK");
        return MessageError::log_not_sealed_against_shrink;
    }
    // Hostile-input rule 4 (CVE-2020-10722): the area must lie inside the
    // fd, offset + size computed without wrapping; the same checks as for
    // guest memory, since a bad log is as dangerous to write as bad memory.
    const MemoryRegionDesc desc{0, base.mmap_size, 0, base.mmap_offset};
    virtio::GuestRegion mapped;
    if (MessageError e = map_memory_region(desc, m.fds[0].get(), &mapped); e != MessageError::ok) {
        return e;
    }
    auto log = std::make_shared<const virtio::DirtyLog>(mapped.host_addr, mapped.size,
                                                        std::move(mapped.mapping));
    // A log that misses some of the guest's pages would migrate them stale.
    // (Memory added later comes with a new, bigger log: QEMU resizes it.)
    // The log is mapped, so below 2^47 bytes: covered_bytes() cannot wrap.
    if (log->covered_bytes() < highest_guest_address(*memory_)) {
        return MessageError::log_smaller_than_memory;
    }
    const bool was_logging = logging();
    const virtio::DirtyLog* old_log = dirty_log_.get();
    dirty_log_ = std::move(log);
    // The reply is the empty SET_LOG_BASE the dispatcher builds.
    return apply_logging_change(was_logging, old_log) ? MessageError::ok
                                                      : MessageError::ring_not_in_guest_memory;
}

bool VhostUserDevice::apply_logging_change(bool was_logging, const virtio::DirtyLog* old_log) {
    const bool now = logging();
    if (!was_logging && !now) {
        return true;  // e.g. the log arrives before LOG_ALL: nothing runs differently yet
    }
    if (now && (!was_logging || old_log != dirty_log_.get())) {
        log_->info("dirty logging on: log {} bytes, covers {} MiB of guest memory",
                   dirty_log_->size_bytes(), dirty_log_->covered_bytes() >> 20);
    } else if (!now) {
        log_->info("dirty logging off ({} pages beyond the log)",
                   old_log != nullptr ? old_log->pages_beyond() : 0);
    }
    // Ready rings carry the old state in their snapshots: restart them.
    stop_all_queues();
    return update_all_queues();
}

virtio::RingLogAreas VhostUserDevice::log_areas(const Queue& q) const {
    // The areas the format's device side writes, each where it lies, or at
    // the address the front end gave for logging (vhost-user.rst
    // SET_VRING_ADDR) for the one that address names.
    const virtio::WrittenAreas written =
        with_ring_model([&]<typename R>(std::type_identity<R>) { return R::written_areas(q.num); });
    virtio::RingLogAreas areas;
    size_t slot = 0;
    for (const virtio::WrittenArea& w : written.view()) {
        if (slot == areas.ranges.size()) {
            break;
        }
        if (w.at_log_address && (q.addr.flags & VringAddr::kFlagLog) != 0) {
            areas.ranges[slot] = {q.addr.log_guest_addr, w.bytes};
        } else if (auto gpa = uva_to_gpa(*memory_, area_address(q.addr, w.area))) {
            areas.ranges[slot] = {*gpa, w.bytes};
        }
        ++slot;
    }
    return areas;
}

}  // namespace vnet::vhost_user
