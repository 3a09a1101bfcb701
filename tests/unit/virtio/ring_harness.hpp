// One harness for every device ring model: guest memory (TestGuestMemory),
// the driver-side mock ring of the model's format (the one DriverRing shape
// from src/frontend), and the device ring under test, wired together. Typed
// tests, fuzzers and benchmarks can all drive a ring model through it.
#pragma once

#include <sys/uio.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "frontend/driver_packed_ring.hpp"
#include "frontend/driver_split_ring.hpp"
#include "frontend/raw_packed_ring_writer.hpp"
#include "frontend/raw_split_ring_writer.hpp"
#include "unit/virtio/test_ring.hpp"
#include "virtio/ring/packed_ring.hpp"
#include "virtio/ring/split_device_ring.hpp"

namespace vnet::virtio::test {

// One descriptor as a hostile test writes it, in whichever format: the flag
// bits are the ones both formats share (NEXT 1, WRITE 2, INDIRECT 4).
struct RawDesc {
    uint64_t addr = 0;
    uint32_t len = 0;
    uint16_t flags = 0;
};
inline constexpr uint16_t kRawNext = VirtqDesc::kFlagNext;
inline constexpr uint16_t kRawWrite = VirtqDesc::kFlagWrite;
inline constexpr uint16_t kRawIndirect = VirtqDesc::kFlagIndirect;
static_assert(kRawNext == PackedDesc::kFlagNext && kRawWrite == PackedDesc::kFlagWrite &&
              kRawIndirect == PackedDesc::kFlagIndirect);

// How to build each model's device ring over its driver-side mock, and how
// to write what no driver would (post_raw, table_entry) in its format.
struct SplitModel {
    using Device = SplitDeviceRing;
    using Driver = frontend::DriverSplitRing;
    static constexpr bool kAnySize = false;  // powers of two only (§2.7)

    static bool supports_size(uint32_t n) { return is_valid_split_queue_size(n); }
    static size_t ring_bytes(uint16_t size) { return frontend::ring_storage_bytes(size); }
    static Driver make_driver(std::span<std::byte> storage, uint16_t size, bool event_idx) {
        return Driver(frontend::carve_ring_layout(storage, size), event_idx);
    }
    static Device make_device(const Driver& d, const RingConfig& config) {
        const frontend::DriverRingLayout& l = d.layout();
        // Like QueueSnapshot: the used index comes from the guest's used->idx.
        const uint16_t used = std::atomic_ref<uint16_t>(l.used->idx).load();
        return Device(SplitRingLayout{l.desc, l.avail, l.used, l.size}, config, used);
    }
    // `chain` in descriptors 0.., linked by NEXT where its flags say so,
    // made available at the ring's first avail entry.
    static void post_raw(const Driver& d, std::span<const RawDesc> chain) {
        frontend::RawSplitRingWriter w(d.layout());
        for (size_t i = 0; i < chain.size(); ++i) {
            const bool next = (chain[i].flags & kRawNext) != 0;
            w.set_desc(static_cast<uint16_t>(i), chain[i].addr, chain[i].len, chain[i].flags,
                       next ? static_cast<uint16_t>(i + 1) : 0);
        }
        w.make_available(0);
    }
    // Entry `i` of an indirect table (linked by NEXT to i + 1 where set).
    static std::array<std::byte, 16> table_entry(const RawDesc& e, size_t i) {
        const bool next = (e.flags & kRawNext) != 0;
        const VirtqDesc d{e.addr, e.len, e.flags,
                          next ? static_cast<uint16_t>(i + 1) : uint16_t{0}};
        return std::bit_cast<std::array<std::byte, 16>>(d);
    }
};

struct PackedModel {
    using Device = PackedRing;
    using Driver = frontend::DriverPackedRing;
    static constexpr bool kAnySize = true;

    static bool supports_size(uint32_t n) { return is_valid_packed_queue_size(n); }
    static size_t ring_bytes(uint16_t size) { return frontend::packed_ring_storage_bytes(size); }
    static Driver make_driver(std::span<std::byte> storage, uint16_t size, bool event_idx) {
        return Driver(frontend::carve_packed_ring_layout(storage, size), event_idx);
    }
    static Device make_device(const Driver& d, const RingConfig& config) {
        const frontend::DriverPackedRingLayout& l = d.layout();
        return Device(PackedRingLayout{l.desc, l.driver_event, l.device_event, l.size}, config);
    }
    // `chain` in slots 0.. of the first lap, its head's flags stored last.
    static void post_raw(const Driver& d, std::span<const RawDesc> chain) {
        std::vector<PackedDesc> descs;
        for (const RawDesc& r : chain) {
            descs.push_back(PackedDesc{r.addr, r.len, 0,
                                       static_cast<uint16_t>(r.flags | avail_flags_for(true))});
        }
        frontend::RawPackedRingWriter(d.layout()).publish_chain(PackedPosition{0, true}, descs);
    }
    // Entry `i` of an indirect table: entries are in order, NEXT is ignored (§2.8.7).
    static std::array<std::byte, 16> table_entry(const RawDesc& e, size_t /*i*/) {
        return std::bit_cast<std::array<std::byte, 16>>(PackedDesc{e.addr, e.len, 0, e.flags});
    }
};

template <typename Model>
class RingHarness {
public:
    using Device = typename Model::Device;
    using Driver = typename Model::Driver;

    static constexpr uint64_t kGpa = 0x100000;
    static constexpr uint32_t kSegmentBytes = 64;
    static constexpr size_t kIovecs = 64;

    RingHarness(uint16_t size, bool event_idx, bool indirect = false)
        : ring_bytes_((Model::ring_bytes(size) + 4095) & ~size_t{4095}),
          buffer_count_(4u * (size < 1024 ? size : 1024u)) {
        host_ = memory.add_region(kGpa, ring_bytes_ + uint64_t{buffer_count_} * kSegmentBytes);
        driver.emplace(Model::make_driver(
            std::span<std::byte>(reinterpret_cast<std::byte*>(host_), ring_bytes_), size,
            event_idx));
        config = RingConfig{&memory.map(), indirect, event_idx, false};
        device = Model::make_device(*driver, config);
    }

    uint16_t size() const { return driver->size(); }

    // Guest address of the n-th data buffer (they are reused modulo the pool).
    uint64_t buffer_gpa(uint32_t n) const {
        return kGpa + ring_bytes_ + uint64_t{n % buffer_count_} * kSegmentBytes;
    }
    const void* buffer_host(uint32_t n) const { return memory.host(buffer_gpa(n)); }

    // The driver queues one chain: `readable` then `writable` segments of
    // kSegmentBytes, in buffers cookie*4, cookie*4+1, ...
    bool add(uint32_t cookie, uint16_t readable, uint16_t writable = 0) {
        std::array<frontend::BufferSegment, 16> segs{};
        const uint16_t n = static_cast<uint16_t>(readable + writable);
        for (uint16_t i = 0; i < n; ++i) {
            segs[i] = frontend::BufferSegment{buffer_gpa(cookie * 4 + i), kSegmentBytes,
                                              i < readable ? frontend::BufferAccess::device_reads
                                                           : frontend::BufferAccess::device_writes};
        }
        return driver->add_chain(std::span<const frontend::BufferSegment>(segs.data(), n), cookie);
    }
    // add() and publish() for each cookie in [first, first + count).
    void post(uint32_t first, uint32_t count, uint16_t readable = 1, uint16_t writable = 0) {
        for (uint32_t c = first; c < first + count; ++c) {
            if (!add(c, readable, writable)) {
                throw std::runtime_error("RingHarness: driver ring full");
            }
        }
        driver->publish();
    }

    // What no driver writes: one chain of raw descriptors, and an indirect
    // table at `gpa`. Do not mix with add()/post() on the same ring.
    void post_raw(std::initializer_list<RawDesc> chain) {
        Model::post_raw(*driver, std::span<const RawDesc>(chain.begin(), chain.size()));
    }
    void write_table(uint64_t gpa, std::initializer_list<RawDesc> entries) {
        size_t i = 0;
        for (const RawDesc& e : entries) {
            const std::array<std::byte, 16> bytes = Model::table_entry(e, i);
            std::memcpy(memory.host(gpa + 16 * i, 16), bytes.data(), bytes.size());
            ++i;
        }
    }

    PopStatus pop(PoppedChain& chain, size_t room = kIovecs) {
        return device.pop(std::span<iovec>(iov.data(), room), chain);
    }
    void complete(const PoppedChain& chain, uint32_t len = 0) {
        device.add_used(chain.id, chain.slots, len);
    }
    // Pops everything available and completes it in order, publishing once.
    uint32_t pop_and_complete_all(uint32_t len = 0) {
        PoppedChain chain;
        uint32_t n = 0;
        while (pop(chain) == PopStatus::ok) {
            complete(chain, len);
            ++n;
        }
        device.publish_used();
        return n;
    }

    std::vector<frontend::Completion> reclaim_all() {
        std::array<frontend::Completion, 64> out{};
        std::vector<frontend::Completion> all;
        for (;;) {
            frontend::UsedRingError error = frontend::UsedRingError::ok;
            const uint16_t n = driver->reclaim(out, &error);
            if (error != frontend::UsedRingError::ok) {
                throw std::runtime_error(frontend::to_string(error));
            }
            all.insert(all.end(), out.begin(), out.begin() + n);
            if (n < out.size()) {
                return all;
            }
        }
    }

    TestGuestMemory memory;
    RingConfig config;
    std::optional<Driver> driver;
    Device device;
    std::array<iovec, kIovecs> iov{};

private:
    size_t ring_bytes_;
    uint32_t buffer_count_;
    uint8_t* host_ = nullptr;
};

}  // namespace vnet::virtio::test
