// Driver-side helpers for virtio unit tests: guest memory made of plain
// aligned buffers, and a split ring laid out in it that a test fills the way
// a guest driver would (descriptors, avail ring, used_event) and inspects the
// way a guest would (used ring, avail_event, used flags).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>

#include "virtio/descriptor_chain.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/split_ring.hpp"

namespace vnet::virtio::test {

// Guest memory backed by heap buffers; each region owns its buffer through
// GuestRegion::mapping, as a real region owns its mmap.
class TestGuestMemory {
public:
    // Maps `size` zeroed bytes at guest address `gpa` (user address = gpa)
    // and returns the host buffer.
    uint8_t* add_region(uint64_t gpa, uint64_t size) {
        const uint64_t rounded = (size + 4095) & ~uint64_t{4095};
        void* raw = std::aligned_alloc(4096, rounded);
        if (raw == nullptr) {
            throw std::bad_alloc();
        }
        std::memset(raw, 0, rounded);
        auto* host = static_cast<uint8_t*>(raw);
        GuestRegion region{gpa, size, gpa, host, std::shared_ptr<const void>(raw, std::free)};
        if (map_.add(std::move(region)) != MemoryError::ok) {
            throw std::runtime_error("TestGuestMemory: region rejected");
        }
        return host;
    }

    GuestMemoryMap& map() { return map_; }
    const GuestMemoryMap& map() const { return map_; }

    // Host pointer for `len` bytes at `gpa`; the range must be mapped.
    uint8_t* host(uint64_t gpa, uint64_t len = 1) const {
        uint8_t* p = map_.gpa_to_host(gpa, len);
        if (p == nullptr) {
            throw std::out_of_range("TestGuestMemory: unmapped guest address");
        }
        return p;
    }

    // Writes one descriptor at `gpa` (an indirect table entry, or anywhere).
    void write_desc(uint64_t gpa, uint64_t addr, uint32_t len, uint16_t flags = 0,
                    uint16_t next = 0) {
        const VirtqDesc d{addr, len, flags, next};
        std::memcpy(host(gpa, sizeof d), &d, sizeof d);
    }

    // Writes consecutive descriptors starting at `gpa`.
    void write_descs(uint64_t gpa, std::initializer_list<VirtqDesc> descs) {
        for (const VirtqDesc& d : descs) {
            write_desc(gpa, d.addr, d.len, d.flags, d.next);
            gpa += sizeof(VirtqDesc);
        }
    }

private:
    GuestMemoryMap map_;
};

// A split ring laid out contiguously at `gpa`: descriptor table, avail ring
// (+ used_event), used ring (+ avail_event), with the spec's alignments.
class TestRing {
public:
    static constexpr uint64_t bytes_needed(uint16_t size) {
        return used_offset(size) + used_ring_bytes(size);
    }

    TestRing(TestGuestMemory& memory, uint64_t gpa, uint16_t size)
        : memory_(memory), gpa_(gpa), size_(size) {
        base_ = memory.host(gpa, bytes_needed(size));
    }

    uint16_t size() const { return size_; }
    uint64_t desc_gpa(uint16_t index) const { return gpa_ + 16ull * index; }

    void set_desc(uint16_t index, uint64_t addr, uint32_t len, uint16_t flags = 0,
                  uint16_t next = 0) {
        memory_.write_desc(desc_gpa(index), addr, len, flags, next);
    }

    // Driver side of virtio 1.2 §2.7.13: put `head` in the next avail slot
    // and publish it with a release store of avail->idx.
    void make_available(uint16_t head) {
        set_avail_entry(avail_idx(), head);
        set_avail_idx(static_cast<uint16_t>(avail_idx() + 1));
    }
    void set_avail_entry(uint16_t position, uint16_t head) {
        avail()->ring[position & (size_ - 1)] = head;
    }
    void set_avail_idx(uint16_t idx) {
        std::atomic_ref<uint16_t>(avail()->idx).store(idx, std::memory_order_release);
    }
    uint16_t avail_idx() const { return avail()->idx; }
    void set_avail_flags(uint16_t flags) { avail()->flags = flags; }
    void set_used_event(uint16_t value) { avail()->ring[size_] = value; }

    uint16_t used_idx() const {
        return std::atomic_ref<uint16_t>(used()->idx).load(std::memory_order_acquire);
    }
    void set_used_idx(uint16_t idx) { used()->idx = idx; }
    uint16_t used_flags() const { return used()->flags; }
    VirtqUsedElem used_elem(uint16_t slot) const { return used()->ring[slot & (size_ - 1)]; }
    uint16_t avail_event() const {
        uint16_t value;
        std::memcpy(&value, &used()->ring[size_], sizeof value);
        return value;
    }

    SplitRingLayout layout() const { return SplitRingLayout{desc(), avail(), used(), size_}; }

    ChainWalkContext walk_context(bool indirect_allowed, size_t* hint = nullptr) const {
        return ChainWalkContext{desc(), size_, indirect_allowed, &memory_.map(), hint};
    }

private:
    static constexpr uint64_t avail_offset(uint16_t size) { return desc_table_bytes(size); }
    static constexpr uint64_t used_offset(uint16_t size) {
        // avail_ring_bytes includes used_event; the used ring is 4-byte aligned (virtio 1.2 §2.7).
        return (avail_offset(size) + avail_ring_bytes(size) + 3) & ~uint64_t{3};
    }

    VirtqDesc* desc() const { return static_cast<VirtqDesc*>(static_cast<void*>(base_)); }
    VirtqAvail* avail() const {
        return static_cast<VirtqAvail*>(static_cast<void*>(base_ + avail_offset(size_)));
    }
    VirtqUsed* used() const {
        return static_cast<VirtqUsed*>(static_cast<void*>(base_ + used_offset(size_)));
    }

    TestGuestMemory& memory_;
    uint64_t gpa_;
    uint16_t size_;
    uint8_t* base_;
};

}  // namespace vnet::virtio::test
