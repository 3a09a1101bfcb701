// GuestMemoryMap: the untrusted-input boundary between guest addresses and
// our pointers. Regions come from SET_MEM_TABLE / ADD_MEM_REG; each is a
// range of guest-physical addresses (what descriptors carry) that is also a
// range of the front end's virtual addresses (what SET_VRING_ADDR carries),
// mapped at host_addr in our process.
//
// Pure and syscall-free: the mapping itself is made by vhost_user and kept
// alive by the `mapping` handle, so a map snapshot held by a worker keeps its
// memory mapped until the worker lets go of it.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace vnet::virtio {

struct GuestRegion {
    uint64_t guest_phys_addr = 0;
    uint64_t size = 0;
    uint64_t user_addr = 0;  // front-end virtual address of the region's first byte
    uint8_t* host_addr = nullptr;
    std::shared_ptr<const void> mapping;  // keeps the mmap alive; may be null in tests
    uint64_t mmap_offset = 0;  // where the region starts in the front end's fd (vnetctl show)

    uint64_t gpa_end() const { return guest_phys_addr + size; }  // exclusive
    uint64_t uva_end() const { return user_addr + size; }
};

enum class MemoryError : uint8_t {
    ok,
    zero_size,
    address_overflow,  // gpa+size or uva+size wraps around 2^64
    null_host_address,
    overlaps_existing,
    too_many_regions,
    no_such_region,
};
const char* to_string(MemoryError e);

class GuestMemoryMap {
public:
    // QEMU's VHOST_USER_MAX_RAM_SLOTS is 512; we advertise 509 like
    // libvhost-user and accept up to this many.
    static constexpr size_t kMaxRegions = 512;

    MemoryError add(GuestRegion region);
    // Removes the region matching all three (vhost-user.rst REM_MEM_REG).
    MemoryError remove(uint64_t guest_phys_addr, uint64_t user_addr, uint64_t size);

    size_t region_count() const { return by_gpa_.size(); }
    std::span<const GuestRegion> regions() const { return by_gpa_; }

    // The region containing `gpa`, or nullptr. `hint` is a per-caller
    // last-hit cache (an index into regions()); lookups with many regions
    // stay O(1) for a queue that keeps touching the same region.
    const GuestRegion* find_gpa(uint64_t gpa, size_t* hint = nullptr) const;
    const GuestRegion* find_uva(uint64_t uva) const;
    // The region whose mapping holds host address `p` (the dirty log turns
    // a lent buffer back into its guest address); `hint` as for find_gpa.
    const GuestRegion* find_host(const uint8_t* p, size_t* hint = nullptr) const;

    // A host pointer for [gpa, gpa+len) only if the whole range lies in one
    // region; nullptr otherwise (also for len == 0 past the end).
    uint8_t* gpa_to_host(uint64_t gpa, uint64_t len, size_t* hint = nullptr) const;
    uint8_t* uva_to_host(uint64_t uva, uint64_t len) const;

    // Splits [gpa, gpa+len) into host iovecs, one per region it crosses,
    // appended at out[*count...]. Returns false if any byte is unmapped or
    // more than out.size() pieces would be needed (*count is then unspecified).
    bool gpa_to_iovecs(uint64_t gpa, uint64_t len, std::span<iovec> out, size_t* count,
                       size_t* hint = nullptr) const;

private:
    std::vector<GuestRegion> by_gpa_;  // sorted by guest_phys_addr, non-overlapping
};

}  // namespace vnet::virtio
