#include "virtio/guest_memory.hpp"

#include <algorithm>

namespace vnet::virtio {

const char* to_string(MemoryError e) {
    switch (e) {
        case MemoryError::ok:
            return "ok";
        case MemoryError::zero_size:
            return "region size is zero";
        case MemoryError::address_overflow:
            return "region end overflows 64-bit addresses";
        case MemoryError::null_host_address:
            return "region has no host mapping";
        case MemoryError::overlaps_existing:
            return "region overlaps an existing region";
        case MemoryError::too_many_regions:
            return "too many memory regions";
        case MemoryError::no_such_region:
            return "no such memory region";
    }
    return "unknown memory error";
}

namespace {

bool ranges_overlap(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
    return a < b + b_size && b < a + a_size;
}

}  // namespace

MemoryError GuestMemoryMap::add(GuestRegion region) {
    if (region.size == 0) {
        return MemoryError::zero_size;
    }
    if (region.guest_phys_addr + region.size < region.guest_phys_addr ||
        region.user_addr + region.size < region.user_addr) {
        return MemoryError::address_overflow;
    }
    if (region.host_addr == nullptr) {
        return MemoryError::null_host_address;
    }
    if (by_gpa_.size() >= kMaxRegions) {
        return MemoryError::too_many_regions;
    }
    for (const GuestRegion& r : by_gpa_) {
        if (ranges_overlap(r.guest_phys_addr, r.size, region.guest_phys_addr, region.size) ||
            ranges_overlap(r.user_addr, r.size, region.user_addr, region.size)) {
            return MemoryError::overlaps_existing;
        }
    }
    auto pos = std::lower_bound(
        by_gpa_.begin(), by_gpa_.end(), region.guest_phys_addr,
        [](const GuestRegion& r, uint64_t gpa) { return r.guest_phys_addr < gpa; });
    by_gpa_.insert(pos, std::move(region));
    return MemoryError::ok;
}

MemoryError GuestMemoryMap::remove(uint64_t guest_phys_addr, uint64_t user_addr, uint64_t size) {
    auto it = std::find_if(by_gpa_.begin(), by_gpa_.end(), [&](const GuestRegion& r) {
        return r.guest_phys_addr == guest_phys_addr && r.user_addr == user_addr && r.size == size;
    });
    if (it == by_gpa_.end()) {
        return MemoryError::no_such_region;
    }
    by_gpa_.erase(it);
    return MemoryError::ok;
}

const GuestRegion* GuestMemoryMap::find_gpa(uint64_t gpa, size_t* hint) const {
    if (hint != nullptr && *hint < by_gpa_.size()) {
        const GuestRegion& cached = by_gpa_[*hint];
        if (gpa - cached.guest_phys_addr < cached.size) {
            return &cached;
        }
    }
    // First region whose start is > gpa; the candidate is the one before it.
    auto it = std::upper_bound(
        by_gpa_.begin(), by_gpa_.end(), gpa,
        [](uint64_t addr, const GuestRegion& r) { return addr < r.guest_phys_addr; });
    if (it == by_gpa_.begin()) {
        return nullptr;
    }
    --it;
    if (gpa - it->guest_phys_addr >= it->size) {
        return nullptr;
    }
    if (hint != nullptr) {
        *hint = static_cast<size_t>(it - by_gpa_.begin());
    }
    return &*it;
}

const GuestRegion* GuestMemoryMap::find_uva(uint64_t uva) const {
    // Ring addresses are translated once per SET_VRING_ADDR, so a linear scan
    // over the (uva-unsorted) regions is fine here.
    for (const GuestRegion& r : by_gpa_) {
        if (uva - r.user_addr < r.size) {
            return &r;
        }
    }
    return nullptr;
}

const GuestRegion* GuestMemoryMap::find_host(const uint8_t* p, size_t* hint) const {
    const auto addr = reinterpret_cast<uintptr_t>(p);
    auto holds = [addr](const GuestRegion& r) {
        return addr - reinterpret_cast<uintptr_t>(r.host_addr) < r.size;  // wraps if below
    };
    if (hint != nullptr && *hint < by_gpa_.size() && holds(by_gpa_[*hint])) {
        return &by_gpa_[*hint];
    }
    // Only while the front end logs, and the hint nearly always hits.
    for (size_t i = 0; i < by_gpa_.size(); ++i) {
        if (holds(by_gpa_[i])) {
            if (hint != nullptr) {
                *hint = i;
            }
            return &by_gpa_[i];
        }
    }
    return nullptr;
}

uint8_t* GuestMemoryMap::gpa_to_host(uint64_t gpa, uint64_t len, size_t* hint) const {
    const GuestRegion* r = find_gpa(gpa, hint);
    if (r == nullptr) {
        return nullptr;
    }
    uint64_t offset = gpa - r->guest_phys_addr;
    if (len > r->size - offset) {
        return nullptr;
    }
    return r->host_addr + offset;
}

uint8_t* GuestMemoryMap::uva_to_host(uint64_t uva, uint64_t len) const {
    const GuestRegion* r = find_uva(uva);
    if (r == nullptr) {
        return nullptr;
    }
    uint64_t offset = uva - r->user_addr;
    if (len > r->size - offset) {
        return nullptr;
    }
    return r->host_addr + offset;
}

bool GuestMemoryMap::gpa_to_iovecs(uint64_t gpa, uint64_t len, std::span<iovec> out, size_t* count,
                                   size_t* hint) const {
    if (gpa + len < gpa) {
        return false;
    }
    while (len > 0) {
        const GuestRegion* r = find_gpa(gpa, hint);
        if (r == nullptr || *count >= out.size()) {
            return false;
        }
        uint64_t offset = gpa - r->guest_phys_addr;
        uint64_t piece = std::min(len, r->size - offset);
        out[*count] = iovec{r->host_addr + offset, static_cast<size_t>(piece)};
        ++*count;
        gpa += piece;
        len -= piece;
    }
    return true;
}

}  // namespace vnet::virtio
