#include "frontend/driver_split_ring.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <vector>

#include "unit/frontend/fake_device_ring.hpp"

namespace vnet::frontend {
namespace {

using testing::FakeDeviceRing;
using virtio::VirtqAvail;
using virtio::VirtqDesc;
using virtio::VirtqUsed;

// Plain heap storage for a ring: no guest memory, no back end.
struct RingStorage {
    explicit RingStorage(uint16_t size)
        : bytes(ring_storage_bytes(size)),
          mem(static_cast<std::byte*>(std::aligned_alloc(kRingAreaAlign, bytes)), &std::free),
          layout(carve_ring_layout({mem.get(), bytes}, size)) {}
    size_t bytes;
    std::unique_ptr<std::byte, decltype(&std::free)> mem;
    DriverRingLayout layout;
};

uintptr_t addr(const void* p) {
    return reinterpret_cast<uintptr_t>(p);
}

TEST(DriverRingLayout, places_areas_aligned_apart_and_inside_the_storage) {
    RingStorage s(256);
    const DriverRingLayout& l = s.layout;
    EXPECT_EQ(addr(l.desc) % 16, 0u);  // virtio 1.2 §2.7: desc 16
    EXPECT_EQ(addr(l.avail) % 2, 0u);  // avail 2
    EXPECT_EQ(addr(l.used) % 4, 0u);   // used 4
    EXPECT_GE(addr(l.avail), addr(l.desc) + virtio::desc_table_bytes(256));
    EXPECT_GE(addr(l.used), addr(l.avail) + virtio::avail_ring_bytes(256));
    EXPECT_LE(addr(l.used) + virtio::used_ring_bytes(256), addr(s.mem.get()) + s.bytes);
    // The device-written used ring never shares a cache line with driver areas.
    EXPECT_EQ(addr(l.used) % kRingAreaAlign, 0u);
}

TEST(DriverRingLayout, rejects_sizes_that_are_not_powers_of_two) {
    std::vector<std::byte> buf(1 << 16);
    EXPECT_THROW(carve_ring_layout(buf, 0), std::invalid_argument);
    EXPECT_THROW(carve_ring_layout(buf, 100), std::invalid_argument);
}

TEST(DriverSplitRing, added_buffers_stay_invisible_until_publish) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    ASSERT_TRUE(ring.add_buffer(0x1000, 100, BufferAccess::device_reads, 7));
    ASSERT_TRUE(ring.add_buffer(0x2000, 200, BufferAccess::device_reads, 8));
    EXPECT_EQ(dev.avail_idx(), 0);
    ring.publish();
    EXPECT_EQ(dev.avail_idx(), 2);
    const std::vector<uint16_t> heads = dev.pop_avail();
    ASSERT_EQ(heads.size(), 2u);
    EXPECT_EQ(dev.desc(heads[0]).addr, 0x1000u);
    EXPECT_EQ(dev.desc(heads[0]).len, 100u);
    EXPECT_EQ(dev.desc(heads[0]).flags, 0);
    EXPECT_EQ(dev.desc(heads[1]).addr, 0x2000u);
}

TEST(DriverSplitRing, writable_buffers_carry_the_write_flag) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    ring.add_buffer(0x1000, 2048, BufferAccess::device_writes, 0);
    ring.publish();
    EXPECT_EQ(dev.desc(dev.pop_avail().at(0)).flags, VirtqDesc::kFlagWrite);
}

TEST(DriverSplitRing, add_fails_without_change_when_the_ring_is_full) {
    RingStorage s(4);
    DriverSplitRing ring(s.layout, false);
    for (uint32_t i = 0; i < 4; ++i) {
        ASSERT_TRUE(ring.add_buffer(0x1000 * i, 64, BufferAccess::device_reads, i));
    }
    EXPECT_EQ(ring.free_descriptors(), 0);
    EXPECT_FALSE(ring.add_buffer(0x9000, 64, BufferAccess::device_reads, 9));
    EXPECT_EQ(ring.avail_shadow_idx(), 4);
}

TEST(DriverSplitRing, chain_links_segments_in_order_with_next_flags) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    const std::array<BufferSegment, 3> segs{{
        {0x1000, 12, BufferAccess::device_reads},
        {0x2000, 1500, BufferAccess::device_reads},
        {0x3000, 64, BufferAccess::device_writes},
    }};
    ASSERT_TRUE(ring.add_chain(segs, 42));
    EXPECT_EQ(ring.free_descriptors(), 5);
    ring.publish();
    uint16_t d = dev.pop_avail().at(0);
    for (size_t i = 0; i < segs.size(); ++i) {
        const VirtqDesc& desc = dev.desc(d);
        EXPECT_EQ(desc.addr, segs[i].addr);
        EXPECT_EQ(desc.len, segs[i].len);
        const bool last = i + 1 == segs.size();
        EXPECT_EQ((desc.flags & VirtqDesc::kFlagNext) != 0, !last);
        EXPECT_EQ((desc.flags & VirtqDesc::kFlagWrite) != 0,
                  segs[i].access == BufferAccess::device_writes);
        d = desc.next;
    }
}

TEST(DriverSplitRing, chain_longer_than_free_descriptors_is_refused) {
    RingStorage s(2);
    DriverSplitRing ring(s.layout, false);
    const std::array<BufferSegment, 3> segs{};
    EXPECT_FALSE(ring.add_chain(segs, 0));
    EXPECT_EQ(ring.free_descriptors(), 2);
}

TEST(DriverSplitRing, reclaim_returns_cookies_and_lengths_and_frees_descriptors) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    ring.add_buffer(0x1000, 2048, BufferAccess::device_writes, 100);
    ring.add_buffer(0x2000, 2048, BufferAccess::device_writes, 200);
    ring.publish();
    const std::vector<uint16_t> heads = dev.pop_avail();
    dev.push_used(heads[1], 60);  // completions may come out of order
    dev.push_used(heads[0], 1514);
    UsedRingError err;
    std::array<Completion, 8> out{};
    EXPECT_EQ(ring.reclaim(out, &err), 0);  // nothing until used->idx moves
    dev.publish_used();
    EXPECT_EQ(ring.used_pending(), 2);
    ASSERT_EQ(ring.reclaim(out, &err), 2);
    EXPECT_EQ(err, UsedRingError::ok);
    EXPECT_EQ(out[0].cookie, 200u);
    EXPECT_EQ(out[0].len, 60u);
    EXPECT_EQ(out[1].cookie, 100u);
    EXPECT_EQ(out[1].len, 1514u);
    EXPECT_EQ(ring.free_descriptors(), 8);
    EXPECT_EQ(ring.chains_in_flight(), 0);
}

TEST(DriverSplitRing, reclaim_takes_no_more_than_the_output_holds) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    for (uint32_t i = 0; i < 5; ++i) {
        ring.add_buffer(0x1000 * i, 64, BufferAccess::device_reads, i);
    }
    ring.publish();
    for (uint16_t h : dev.pop_avail()) {
        dev.push_used(h, 0);
    }
    dev.publish_used();
    UsedRingError err;
    std::array<Completion, 3> out{};
    EXPECT_EQ(ring.reclaim(out, &err), 3);
    EXPECT_EQ(ring.reclaim(out, &err), 2);
    EXPECT_EQ(out[1].cookie, 4u);
}

TEST(DriverSplitRing, reclaim_rejects_a_used_index_beyond_what_is_in_flight) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    ring.add_buffer(0x1000, 64, BufferAccess::device_reads, 0);
    ring.publish();
    dev.force_used_idx(2);
    UsedRingError err;
    std::array<Completion, 8> out{};
    EXPECT_EQ(ring.reclaim(out, &err), 0);
    EXPECT_EQ(err, UsedRingError::used_index_jump);
}

TEST(DriverSplitRing, reclaim_rejects_ids_out_of_range_or_not_in_flight) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    ring.add_buffer(0x1000, 64, BufferAccess::device_reads, 0);
    ring.add_buffer(0x2000, 64, BufferAccess::device_reads, 1);
    ring.publish();
    const std::vector<uint16_t> heads = dev.pop_avail();
    dev.push_used(heads[0], 0);
    dev.push_used(heads[0], 0);  // the same head twice
    dev.publish_used();
    UsedRingError err;
    std::array<Completion, 8> out{};
    EXPECT_EQ(ring.reclaim(out, &err), 1);
    EXPECT_EQ(err, UsedRingError::id_not_in_flight);

    RingStorage s2(8);
    DriverSplitRing ring2(s2.layout, false);
    FakeDeviceRing dev2(s2.layout);
    ring2.add_buffer(0x1000, 64, BufferAccess::device_reads, 0);
    ring2.publish();
    dev2.push_used(8, 0);
    dev2.publish_used();
    EXPECT_EQ(ring2.reclaim(out, &err), 0);
    EXPECT_EQ(err, UsedRingError::id_out_of_range);
}

TEST(DriverSplitRing, kick_without_event_idx_follows_the_no_notify_flag) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    ring.add_buffer(0x1000, 64, BufferAccess::device_reads, 0);
    ring.publish();
    EXPECT_TRUE(ring.kick_needed());
    EXPECT_FALSE(ring.kick_needed());  // nothing new published since
    dev.set_used_flags(VirtqUsed::kFlagNoNotify);
    ring.add_buffer(0x2000, 64, BufferAccess::device_reads, 1);
    ring.publish();
    EXPECT_FALSE(ring.kick_needed());
}

TEST(DriverSplitRing, kick_with_event_idx_only_when_the_batch_crosses_avail_event) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, true);
    FakeDeviceRing dev(s.layout);
    dev.set_avail_event(3);  // the device wants a kick once entry 3 is published
    for (uint32_t i = 0; i < 3; ++i) {
        ring.add_buffer(0x1000, 64, BufferAccess::device_reads, i);
    }
    ring.publish();  // 0..2 published: entry 3 not yet
    EXPECT_FALSE(ring.kick_needed());
    ring.add_buffer(0x1000, 64, BufferAccess::device_reads, 3);
    ring.publish();  // entry 3 published
    EXPECT_TRUE(ring.kick_needed());
    ring.add_buffer(0x1000, 64, BufferAccess::device_reads, 4);
    ring.publish();
    EXPECT_FALSE(ring.kick_needed());  // already past the event
}

TEST(DriverSplitRing, kick_with_event_idx_is_decided_correctly_across_the_16_bit_wrap) {
    RingStorage s(8);
    constexpr uint16_t kStart = 65532;
    DriverSplitRing ring(s.layout, true, kStart);
    FakeDeviceRing dev(s.layout, kStart);
    UsedRingError err;
    std::array<Completion, 8> out{};

    // Event at 1 (after the wrap): a batch 65532..65535 does not cross it.
    dev.set_avail_event(1);
    for (uint32_t i = 0; i < 4; ++i) {
        ring.add_buffer(0x1000, 64, BufferAccess::device_reads, i);
    }
    ring.publish();
    EXPECT_EQ(dev.avail_idx(), 0);  // wrapped
    EXPECT_FALSE(ring.kick_needed());
    for (uint16_t h : dev.pop_avail()) {
        dev.push_used(h, 0);
    }
    dev.publish_used();
    EXPECT_EQ(ring.reclaim(out, &err), 4);

    // 0..3 crosses entry 1: kick.
    for (uint32_t i = 0; i < 4; ++i) {
        ring.add_buffer(0x1000, 64, BufferAccess::device_reads, i);
    }
    ring.publish();
    EXPECT_TRUE(ring.kick_needed());

    // A batch that straddles the wrap and the event at 65535.
    RingStorage s2(8);
    DriverSplitRing ring2(s2.layout, true, 65533);
    FakeDeviceRing dev2(s2.layout, 65533);
    dev2.set_avail_event(65535);
    for (uint32_t i = 0; i < 5; ++i) {  // 65533..1
        ring2.add_buffer(0x1000, 64, BufferAccess::device_reads, i);
    }
    ring2.publish();
    EXPECT_TRUE(ring2.kick_needed());
}

TEST(DriverSplitRing, enable_interrupts_sets_used_event_and_reports_pending_work) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, true);
    FakeDeviceRing dev(s.layout);
    ring.add_buffer(0x1000, 2048, BufferAccess::device_writes, 0);
    ring.add_buffer(0x2000, 2048, BufferAccess::device_writes, 1);
    ring.publish();
    EXPECT_FALSE(ring.enable_interrupts());
    EXPECT_EQ(dev.used_event(), 0);  // call at the very next used entry
    EXPECT_FALSE(ring.enable_interrupts_after(1));
    EXPECT_EQ(dev.used_event(), 1);
    const std::vector<uint16_t> heads = dev.pop_avail();
    dev.push_used(heads[0], 100);
    dev.publish_used();
    EXPECT_TRUE(ring.enable_interrupts());  // work is there: do not sleep
    EXPECT_FALSE(ring.enable_interrupts_after(1));

    ring.disable_interrupts();
    // One behind what we consumed: not crossed before a full wrap.
    EXPECT_EQ(dev.used_event(), 0xffff);
}

TEST(DriverSplitRing, interrupt_suppression_without_event_idx_uses_the_avail_flag) {
    RingStorage s(8);
    DriverSplitRing ring(s.layout, false);
    FakeDeviceRing dev(s.layout);
    ring.disable_interrupts();
    EXPECT_EQ(dev.avail_flags(), VirtqAvail::kFlagNoInterrupt);
    ring.enable_interrupts();
    EXPECT_EQ(dev.avail_flags(), 0);
}

TEST(DriverSplitRing, survives_many_16_bit_wraps_without_losing_descriptors) {
    RingStorage s(16);
    DriverSplitRing ring(s.layout, true);
    FakeDeviceRing dev(s.layout);
    UsedRingError err;
    std::array<Completion, 16> out{};
    uint32_t next_cookie = 0;
    uint32_t expect_cookie = 0;
    while (expect_cookie < 3u * 65536u + 100u) {
        // Uneven batches so the wrap lands at varying positions in a batch.
        while (ring.free_descriptors() >= 2 && next_cookie - expect_cookie < 7) {
            const std::array<BufferSegment, 2> segs{{{0x1000, 12, BufferAccess::device_reads},
                                                     {0x2000, 64, BufferAccess::device_reads}}};
            ASSERT_TRUE(ring.add_chain(segs, next_cookie++));
        }
        ring.publish();
        for (uint16_t h : dev.pop_avail()) {
            dev.push_used(h, 0);
        }
        dev.publish_used();
        const uint16_t n = ring.reclaim(out, &err);
        ASSERT_EQ(err, UsedRingError::ok);
        for (uint16_t i = 0; i < n; ++i) {
            ASSERT_EQ(out[i].cookie, expect_cookie++);
        }
    }
    EXPECT_EQ(ring.free_descriptors(), 16);
    EXPECT_GT(expect_cookie, 3u * 65536u);
}

}  // namespace
}  // namespace vnet::frontend
