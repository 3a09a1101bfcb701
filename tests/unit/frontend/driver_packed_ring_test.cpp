// DriverPackedRing against the spec (virtio 1.2 §2.8), with the device side
// written by hand in each test: the driver is checked against the rules, not
// against our own device code.
#include "frontend/driver_packed_ring.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace vnet::frontend {
namespace {

using virtio::PackedDesc;
using virtio::PackedEventSuppress;
using virtio::PackedPosition;

struct PackedStorage {
    explicit PackedStorage(uint16_t size)
        : bytes(packed_ring_storage_bytes(size)),
          mem(static_cast<std::byte*>(std::aligned_alloc(kRingAreaAlign, bytes)), &std::free),
          layout(carve_packed_ring_layout({mem.get(), bytes}, size)) {}
    size_t bytes;
    std::unique_ptr<std::byte, decltype(&std::free)> mem;
    DriverPackedRingLayout layout;
};

// What a device does to hand a chain back: one used descriptor at `slot`.
void device_uses(const DriverPackedRingLayout& l, uint16_t slot, uint16_t id, uint32_t len,
                 bool wrap = true) {
    l.desc[slot].id = id;
    l.desc[slot].len = len;
    l.desc[slot].flags = static_cast<uint16_t>(virtio::used_flags_for(wrap) |
                                               (len != 0 ? PackedDesc::kFlagWrite : 0));
}

TEST(DriverPackedRingLayout, places_the_areas_aligned_and_inside_the_storage) {
    PackedStorage s(3);  // any size is fine for packed rings
    const auto a = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
    EXPECT_EQ(a(s.layout.desc) % 16, 0u);  // virtio 1.2 §2.8.10.1
    EXPECT_EQ(a(s.layout.driver_event) % 4, 0u);
    EXPECT_EQ(a(s.layout.device_event) % kRingAreaAlign, 0u);  // its own cache line
    EXPECT_GE(a(s.layout.driver_event), a(s.layout.desc) + 48);
    EXPECT_LE(a(s.layout.device_event) + 4, a(s.mem.get()) + s.bytes);
}

TEST(DriverPackedRingLayout, rejects_size_zero) {
    std::vector<std::byte> buf(1 << 20);
    EXPECT_THROW(carve_packed_ring_layout(buf, 0), std::invalid_argument);
}

TEST(DriverPackedRing, writes_a_chain_in_consecutive_slots_with_the_head_exposed_last) {
    PackedStorage s(4);
    DriverPackedRing ring(s.layout, false);
    const std::array<BufferSegment, 3> segs{{{0x1000, 10, BufferAccess::device_reads},
                                             {0x2000, 20, BufferAccess::device_reads},
                                             {0x3000, 30, BufferAccess::device_writes}}};
    ASSERT_TRUE(ring.add_chain(segs, 9));
    const PackedDesc* d = s.layout.desc;
    EXPECT_FALSE(virtio::is_available(d[0].flags, true));  // head waits for publish
    EXPECT_TRUE(virtio::is_available(d[1].flags, true));
    EXPECT_EQ(d[1].flags & PackedDesc::kFlagNext, PackedDesc::kFlagNext);
    EXPECT_EQ(d[2].flags & (PackedDesc::kFlagNext | PackedDesc::kFlagWrite),
              PackedDesc::kFlagWrite);
    ring.publish();
    EXPECT_TRUE(virtio::is_available(d[0].flags, true));
    EXPECT_EQ(d[0].addr, 0x1000u);
    EXPECT_EQ(d[2].id, d[0].id);  // the id is in the last descriptor (§2.8.6)
    EXPECT_EQ(ring.free_descriptors(), 1);
    EXPECT_EQ(ring.next_avail(), (PackedPosition{3, true}));
}

TEST(DriverPackedRing, flips_its_wrap_counter_after_the_last_slot) {
    PackedStorage s(2);
    DriverPackedRing ring(s.layout, false);
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 1));
    ASSERT_TRUE(ring.add_buffer(0x2000, 8, BufferAccess::device_reads, 2));
    EXPECT_FALSE(ring.add_buffer(0x3000, 8, BufferAccess::device_reads, 3));  // full
    ring.publish();
    device_uses(s.layout, 0, s.layout.desc[0].id, 0);
    std::array<Completion, 4> out{};
    UsedRingError err;
    ASSERT_EQ(ring.reclaim(out, &err), 1);
    EXPECT_EQ(out[0].cookie, 1u);
    ASSERT_TRUE(ring.add_buffer(0x3000, 8, BufferAccess::device_reads, 3));
    ring.publish();
    EXPECT_TRUE(virtio::is_available(s.layout.desc[0].flags, /*wrap=*/false));
}

TEST(DriverPackedRing, reclaims_and_skips_the_slots_of_the_used_chain) {
    PackedStorage s(8);
    DriverPackedRing ring(s.layout, false);
    const std::array<BufferSegment, 3> segs{};
    ASSERT_TRUE(ring.add_chain(segs, 5));
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_writes, 6));
    ring.publish();
    const uint16_t first_id = s.layout.desc[2].id;
    const uint16_t second_id = s.layout.desc[3].id;
    device_uses(s.layout, 0, second_id, 4);  // out of order: the second chain first
    device_uses(s.layout, 1, first_id, 0);
    EXPECT_EQ(ring.used_pending(), 2);
    std::array<Completion, 4> out{};
    UsedRingError err;
    ASSERT_EQ(ring.reclaim(out, &err), 2);
    EXPECT_EQ(out[0].cookie, 6u);
    EXPECT_EQ(out[0].len, 4u);
    EXPECT_EQ(out[1].cookie, 5u);
    EXPECT_EQ(ring.next_used(), (PackedPosition{4, true}));
    EXPECT_EQ(ring.free_descriptors(), 8);
}

TEST(DriverPackedRing, ignores_the_length_of_a_used_descriptor_without_write) {
    PackedStorage s(4);
    DriverPackedRing ring(s.layout, false);
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 1));
    ring.publish();
    device_uses(s.layout, 0, s.layout.desc[0].id, 0);
    s.layout.desc[0].len = 1234;  // reserved without WRITE (§2.8.4)
    std::array<Completion, 1> out{};
    UsedRingError err;
    ASSERT_EQ(ring.reclaim(out, &err), 1);
    EXPECT_EQ(out[0].len, 0u);
}

TEST(DriverPackedRing, rejects_a_used_id_out_of_range_or_not_in_flight) {
    PackedStorage s(4);
    DriverPackedRing ring(s.layout, false);
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 1));
    ring.publish();
    std::array<Completion, 1> out{};
    UsedRingError err;
    device_uses(s.layout, 0, 4, 0);
    EXPECT_EQ(ring.reclaim(out, &err), 0);
    EXPECT_EQ(err, UsedRingError::id_out_of_range);
    device_uses(s.layout, 0, 3, 0);  // never handed out
    EXPECT_EQ(ring.reclaim(out, &err), 0);
    EXPECT_EQ(err, UsedRingError::id_not_in_flight);
}

TEST(DriverPackedRing, writes_an_indirect_table_and_one_slot_naming_it) {
    PackedStorage s(4);
    DriverPackedRing ring(s.layout, false);
    std::array<PackedDesc, 2> table{};
    const std::array<BufferSegment, 2> segs{
        {{0x1000, 10, BufferAccess::device_reads}, {0x2000, 20, BufferAccess::device_writes}}};
    ASSERT_TRUE(ring.add_indirect(segs, table.data(), 0x9000, 3));
    ring.publish();
    EXPECT_EQ(s.layout.desc[0].addr, 0x9000u);
    EXPECT_EQ(s.layout.desc[0].len, 32u);
    EXPECT_EQ(s.layout.desc[0].flags & PackedDesc::kFlagIndirect, PackedDesc::kFlagIndirect);
    EXPECT_EQ(table[1].flags, PackedDesc::kFlagWrite);  // WRITE is the only table flag
    EXPECT_EQ(ring.free_descriptors(), 3);
}

TEST(DriverPackedRing, kick_needed_follows_the_device_event_area) {
    PackedStorage s(4);
    DriverPackedRing ring(s.layout, true);
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 1));
    ring.publish();
    EXPECT_TRUE(ring.kick_needed());   // ENABLE (zeroed area)
    EXPECT_FALSE(ring.kick_needed());  // nothing new
    s.layout.device_event->flags = PackedEventSuppress::kDisable;
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 2));
    ring.publish();
    EXPECT_FALSE(ring.kick_needed());
    s.layout.device_event->flags = PackedEventSuppress::kDesc;
    s.layout.device_event->off_wrap = 0x0000;  // slot 0 of the next lap
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 3));  // slot 2
    ring.publish();
    EXPECT_FALSE(ring.kick_needed());
    device_uses(s.layout, 0, s.layout.desc[0].id, 0);
    std::array<Completion, 4> out{};
    UsedRingError err;
    ASSERT_EQ(ring.reclaim(out, &err), 1);
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 4));  // slot 3
    ASSERT_TRUE(ring.add_buffer(0x1000, 8, BufferAccess::device_reads, 5));  // slot 0, wrap 0
    ring.publish();
    EXPECT_TRUE(ring.kick_needed());
}

TEST(DriverPackedRing, enable_interrupts_writes_the_driver_event_area) {
    PackedStorage s(8);
    DriverPackedRing plain(s.layout, false);
    plain.disable_interrupts();
    EXPECT_EQ(s.layout.driver_event->flags, PackedEventSuppress::kDisable);
    EXPECT_FALSE(plain.enable_interrupts());
    EXPECT_EQ(s.layout.driver_event->flags, PackedEventSuppress::kEnable);

    PackedStorage e(8);
    DriverPackedRing ring(e.layout, true);
    EXPECT_FALSE(ring.enable_interrupts_after(3));
    EXPECT_EQ(e.layout.driver_event->flags, PackedEventSuppress::kDesc);
    EXPECT_EQ(e.layout.driver_event->off_wrap, 0x8003);
}

}  // namespace
}  // namespace vnet::frontend
