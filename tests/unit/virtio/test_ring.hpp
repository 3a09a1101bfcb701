// Driver-side helpers for virtio unit tests: guest memory made of plain
// aligned buffers, and a split ring placed in it with the driver side's own
// layout and raw writer (src/frontend), for tests that write descriptors,
// avail entries and indices by hand.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>

#include "frontend/driver_ring_layout.hpp"
#include "frontend/raw_split_ring_writer.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/ring/descriptor_chain.hpp"
#include "virtio/ring/split_ring.hpp"

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

// A split ring in TestGuestMemory at `gpa`, laid out exactly as the driver
// side lays one out (frontend::carve_ring_layout), written through the one
// raw writer (frontend::RawSplitRingWriter) so a test can choose heads,
// loops and indices a real driver never would. What is added here is only
// the glue to the device side: guest addresses and the device's views.
// Tests that need a well-behaved driver use frontend::DriverSplitRing
// (through RingHarness) instead.
class GuestSplitRing : public frontend::RawSplitRingWriter {
public:
    // `gpa` must be 64-byte aligned and mapped for frontend::ring_storage_bytes(size).
    GuestSplitRing(TestGuestMemory& memory, uint64_t gpa, uint16_t size)
        : RawSplitRingWriter(carve(memory, gpa, size)), memory_(memory), gpa_(gpa) {}

    uint64_t desc_gpa(uint16_t index) const { return gpa_ + 16ull * index; }

    SplitRingLayout layout() const {
        const frontend::DriverRingLayout& l = RawSplitRingWriter::layout();
        return SplitRingLayout{l.desc, l.avail, l.used, l.size};
    }
    ChainWalkContext walk_context(bool indirect_allowed, size_t* hint = nullptr) const {
        return ChainWalkContext{RawSplitRingWriter::layout().desc, size(), indirect_allowed,
                                &memory_.map(), hint};
    }

private:
    static frontend::DriverRingLayout carve(TestGuestMemory& memory, uint64_t gpa, uint16_t size) {
        const size_t bytes = frontend::ring_storage_bytes(size);
        return frontend::carve_ring_layout(
            std::span<std::byte>(reinterpret_cast<std::byte*>(memory.host(gpa, bytes)), bytes),
            size);
    }

    TestGuestMemory& memory_;
    uint64_t gpa_;
};

}  // namespace vnet::virtio::test
