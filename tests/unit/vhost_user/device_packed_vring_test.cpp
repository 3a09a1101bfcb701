// Vring setup with VIRTIO_F_RING_PACKED negotiated: the areas, the sizes and
// the 32-bit vring base of packed rings (virtio 1.2 §2.8, vhost-user.rst).
#include <gtest/gtest.h>

#include "unit/vhost_user/device_harness.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::GuestMemory;
using test::ObserverEvent;
using test::packed_ring_of;
using test::RequestBuilder;

// vhost-user.rst: bits 0-14 avail index, 15 avail wrap, 16-30 used index, 31 used wrap.
constexpr uint32_t packed_base(uint16_t avail, bool avail_wrap, uint16_t used, bool used_wrap) {
    return uint32_t{avail} | (avail_wrap ? 0x8000u : 0u) | (uint32_t{used} << 16) |
           (used_wrap ? 0x80000000u : 0u);
}
constexpr uint32_t kFreshBase = packed_base(0, true, 0, true);

class VhostUserPackedVring : public ::testing::Test {
protected:
    void SetUp() override {
        h.negotiate_packed();
        h.set_mem_table(mem);
    }
    test::Reply acked(RequestBuilder& r) {
        r.msg->header.flags |= MessageHeader::kFlagNeedReply;
        return h.send(r);
    }
    MessageError num(uint32_t q, uint32_t n) {
        return acked(RequestBuilder(Request::set_vring_num).payload(VringState{q, n})).result.error;
    }
    MessageError base(uint32_t q, uint32_t b) {
        return acked(RequestBuilder(Request::set_vring_base).payload(VringState{q, b}))
            .result.error;
    }
    MessageError addr(uint32_t q, uint64_t desc, uint64_t driver, uint64_t device) {
        VringAddr a{q, 0, desc, device, driver, 0};
        return acked(RequestBuilder(Request::set_vring_addr).payload(a)).result.error;
    }
    uint32_t get_base(uint32_t q) {
        auto r = h.send(RequestBuilder(Request::get_vring_base).payload(VringState{q, 0}));
        VringState s{};
        EXPECT_TRUE(r.msg->read_payload(s));
        return s.num;
    }

    DeviceHarness h;
    GuestMemory mem;
};

TEST_F(VhostUserPackedVring, offers_ring_packed) {
    EXPECT_TRUE(h.device->offered_features().has(virtio::Feature::ring_packed));
    EXPECT_TRUE(h.device->negotiated_features().has(virtio::Feature::ring_packed));
}

TEST_F(VhostUserPackedVring, a_ready_ring_has_its_three_areas_translated) {
    h.start_ring(mem, 0, 256, kFreshBase);
    ASSERT_TRUE(h.device->queue_ready(0));
    const QueueSnapshot s = h.observer.last_snapshot(0);
    ASSERT_TRUE(std::holds_alternative<virtio::PackedRing>(s.ring));
    const virtio::PackedRingLayout& l = packed_ring_of(s).layout();
    EXPECT_EQ(l.size, 256);
    uint8_t* host = h.device->memory()->regions()[0].host_addr;
    EXPECT_EQ(reinterpret_cast<uint8_t*>(l.desc), host + 0x10000);
    // SET_VRING_ADDR's avail address is the driver area, used the device area.
    EXPECT_EQ(reinterpret_cast<uint8_t*>(l.driver_event), host + 0x18000);
    EXPECT_EQ(reinterpret_cast<uint8_t*>(l.device_event), host + 0x1a000);
    EXPECT_EQ(s.vring_base, kFreshBase);
    EXPECT_EQ(packed_ring_of(s).vring_base(), kFreshBase);
}

TEST_F(VhostUserPackedVring, accepts_any_size_from_1_to_32768) {
    EXPECT_EQ(num(0, 100), MessageError::ok);
    EXPECT_EQ(num(0, 1), MessageError::ok);
    EXPECT_EQ(num(0, 32768), MessageError::ok);
    EXPECT_EQ(num(0, 0), MessageError::vring_num_invalid);
    EXPECT_EQ(num(0, 32769), MessageError::vring_num_invalid);
}

TEST_F(VhostUserPackedVring, a_non_power_of_two_ring_runs) {
    h.start_ring(mem, 0, 100, packed_base(99, false, 99, false));
    ASSERT_TRUE(h.device->queue_ready(0));
    EXPECT_EQ(packed_ring_of(h.observer.last_snapshot(0)).size(), 100);
}

TEST(VhostUserSplitVringSize, a_non_power_of_two_size_needs_ring_packed) {
    DeviceHarness h;
    h.negotiate();  // split
    auto r = h.send(
        RequestBuilder(Request::set_vring_num, test::kNeedReply).payload(VringState{0, 100}));
    EXPECT_EQ(r.result.error, MessageError::vring_num_invalid);
}

TEST_F(VhostUserPackedVring, the_descriptor_ring_must_be_16_byte_aligned) {
    EXPECT_EQ(addr(0, mem.desc_uva(0) + 8, mem.avail_uva(0), mem.used_uva(0)),
              MessageError::vring_addr_misaligned);
}

TEST_F(VhostUserPackedVring, the_event_areas_must_be_4_byte_aligned) {
    // 2-aligned is enough for a split avail ring, not for a packed event area.
    EXPECT_EQ(addr(0, mem.desc_uva(0), mem.avail_uva(0) + 2, mem.used_uva(0)),
              MessageError::vring_addr_misaligned);
    EXPECT_EQ(addr(0, mem.desc_uva(0), mem.avail_uva(0), mem.used_uva(0) + 2),
              MessageError::vring_addr_misaligned);
    EXPECT_EQ(addr(0, mem.desc_uva(0), mem.avail_uva(0) + 4, mem.used_uva(0) + 4),
              MessageError::ok);
}

TEST_F(VhostUserPackedVring, a_descriptor_ring_beyond_guest_memory_breaks_the_device_at_start) {
    // 32768 descriptors are 512 KiB: from 0xf0000 they run past the 1 MiB region.
    ASSERT_EQ(num(0, 32768), MessageError::ok);
    ASSERT_EQ(base(0, kFreshBase), MessageError::ok);
    ASSERT_EQ(addr(0, GuestMemory::kUva + 0xf0000, mem.avail_uva(0), mem.used_uva(0)),
              MessageError::ok);
    h.vring_kick(0);
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_FALSE(h.device->queue_ready(0));
}

TEST_F(VhostUserPackedVring, set_vring_base_keeps_the_32_bit_encoding) {
    const uint32_t b = packed_base(5, true, 3, true);  // two slots in flight
    h.start_ring(mem, 0, 256, b);
    ASSERT_TRUE(h.device->queue_ready(0));
    EXPECT_EQ(h.observer.last_snapshot(0).vring_base, b);
    EXPECT_EQ(packed_ring_of(h.observer.last_snapshot(0)).vring_base(), b) << "built at the base";
    // Without an override the observer reports the snapshot's base back.
    EXPECT_EQ(get_base(0), b);
}

TEST_F(VhostUserPackedVring, get_vring_base_returns_the_workers_32_bit_base) {
    h.start_ring(mem, 0, 256, kFreshBase);
    const uint32_t worker = packed_base(17, false, 12, false);
    h.observer.stop_index_override = worker;
    EXPECT_EQ(get_base(0), worker);
    // Kept for the next start: a second GET_VRING_BASE answers the same.
    h.observer.stop_index_override = -1;
    EXPECT_EQ(get_base(0), worker);
}

TEST_F(VhostUserPackedVring, dpdk_virtio_user_base_with_only_the_avail_half_is_accepted) {
    h.start_ring(mem, 0, 256, 0x8000);
    EXPECT_TRUE(h.device->queue_ready(0));
}

// Hostile-input rule 1: a refused base leaves the ring exactly as it was.
class VhostUserPackedBase : public VhostUserPackedVring {
protected:
    void SetUp() override {
        VhostUserPackedVring::SetUp();
        ASSERT_EQ(num(0, 256), MessageError::ok);
        ASSERT_EQ(base(0, kGood), MessageError::ok);
    }
    void expect_good_base_kept() {
        h.vring_addr(mem, 0);
        h.vring_kick(0);
        h.vring_enable(0);
        ASSERT_TRUE(h.device->queue_ready(0));
        EXPECT_EQ(h.observer.last_snapshot(0).vring_base, kGood);
        EXPECT_FALSE(h.device->is_broken());
    }
    static constexpr uint32_t kGood = packed_base(7, true, 7, true);
};

TEST_F(VhostUserPackedBase, refuses_an_avail_index_not_below_the_size) {
    EXPECT_EQ(base(0, packed_base(256, true, 0, true)),
              MessageError::vring_base_avail_out_of_range);
    EXPECT_EQ(base(0, packed_base(0x7fff, false, 0, true)),
              MessageError::vring_base_avail_out_of_range);
    expect_good_base_kept();
}

TEST_F(VhostUserPackedBase, refuses_a_used_index_not_below_the_size) {
    EXPECT_EQ(base(0, packed_base(0, true, 300, true)), MessageError::vring_base_used_out_of_range);
    expect_good_base_kept();
}

TEST_F(VhostUserPackedBase, refuses_wrap_bits_that_put_used_more_than_a_ring_behind_avail) {
    // avail (5, wrap 1) with used (6, wrap 1): used would be 2*256 - 1 slots behind.
    EXPECT_EQ(base(0, packed_base(5, true, 6, true)),
              MessageError::vring_base_in_flight_exceeds_ring);
    // avail (5, wrap 0) with used (6, wrap 0): the same on the other lap.
    EXPECT_EQ(base(0, packed_base(5, false, 6, false)),
              MessageError::vring_base_in_flight_exceeds_ring);
    expect_good_base_kept();
}

TEST_F(VhostUserPackedBase, accepts_a_full_ring_in_flight) {
    // avail (5, wrap 0) one lap ahead of used (5, wrap 1): 256 slots in flight.
    EXPECT_EQ(base(0, packed_base(5, false, 5, true)), MessageError::ok);
}

TEST_F(VhostUserPackedVring, refuses_a_base_before_the_size_is_known) {
    EXPECT_EQ(base(0, kFreshBase), MessageError::vring_base_without_num);
}

TEST_F(VhostUserPackedBase, a_size_shrunk_below_the_base_breaks_the_device_at_start) {
    ASSERT_EQ(num(0, 4), MessageError::ok);  // the base's index 7 no longer fits
    h.vring_addr(mem, 0);
    h.vring_kick(0);
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_NE(h.device->broken_reason().find("avail index >= queue size"), std::string::npos)
        << h.device->broken_reason();
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 0u);
}

}  // namespace
}  // namespace vnet::vhost_user
