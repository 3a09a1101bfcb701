// The DeviceRing contract, run against every ring model (split and packed)
// through the one driver-side mock shape (RingHarness). What is true of one
// model must be true of the other; format-specific rules live in each
// model's own tests.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <variant>
#include <vector>

#include "unit/virtio/chain_test_layout.hpp"
#include "unit/virtio/ring_harness.hpp"
#include "virtio/ring/any_device_ring.hpp"

namespace vnet::virtio {
namespace {

using test::kRawIndirect;
using test::kRawNext;
using test::kRawWrite;
using test::PackedModel;
using test::RawDesc;
using test::RingHarness;
using test::SplitModel;
using test::chain_layout::HugeRegion;

template <typename Model>
class DeviceRingContract : public ::testing::Test {
protected:
    using Harness = RingHarness<Model>;
};

struct ModelNames {
    template <typename T>
    static std::string GetName(int) {
        return std::is_same_v<T, SplitModel> ? "split" : "packed";
    }
};
using Models = ::testing::Types<SplitModel, PackedModel>;
TYPED_TEST_SUITE(DeviceRingContract, Models, ModelNames);

// ---- what names the format: only the model ------------------------------------

TYPED_TEST(DeviceRingContract, is_the_format_its_feature_bit_selects) {
    using Device = typename TestFixture::Harness::Device;
    const FeatureSet negotiated =
        Device::kFeature.has_value() ? FeatureSet{*Device::kFeature} : FeatureSet{};
    EXPECT_TRUE(std::holds_alternative<std::type_identity<Device>>(ring_model(negotiated)));
    EXPECT_STREQ(format_name(ring_model(negotiated)), Device::kName);
}

TYPED_TEST(DeviceRingContract, states_its_format_cursors_and_guest_fields_by_name) {
    using Device = typename TestFixture::Harness::Device;
    typename TestFixture::Harness h(8, true);
    h.post(0, 3);
    EXPECT_EQ(h.pop_and_complete_all(), 3u);
    const RingState s = h.device.state();
    EXPECT_STREQ(s.format, Device::kName);
    EXPECT_EQ(s.size, 8);
    EXPECT_EQ(s.last_avail_idx & 0x7fff, 3);  // packed: the wrap counter is bit 15
    EXPECT_EQ(s.last_used_idx & 0x7fff, 3);
    ASSERT_FALSE(s.guest.view().empty());
    for (const RingField& f : s.guest.view()) {
        EXPECT_NE(f.name, nullptr);
        EXPECT_TRUE(!f.boolean || f.value <= 1) << f.name;
    }
    // Its base reads back as the avail position it took last.
    const VringBasePositions base = Device::decode_vring_base(h.device.vring_base());
    ASSERT_GE(base.count, 1u);
    EXPECT_STREQ(base.items[0].name, "avail");
    EXPECT_EQ(base.items[0].index, 3);
}

TYPED_TEST(DeviceRingContract, refuses_a_base_its_format_cannot_hold) {
    using Device = typename TestFixture::Harness::Device;
    EXPECT_EQ(Device::validate_vring_base(0x8000, uint16_t{8}), BaseError::ok);
    // Wider than a split index, and for packed an avail index past the ring.
    EXPECT_NE(Device::validate_vring_base(0x0001'8008, uint16_t{8}), BaseError::ok);
}

// ---- pop and complete ----------------------------------------------------------

TYPED_TEST(DeviceRingContract, reports_empty_when_the_driver_posted_nothing) {
    typename TestFixture::Harness h(8, false);
    PoppedChain chain;
    EXPECT_EQ(h.pop(chain), PopStatus::empty);
    h.add(1, 1);  // queued but not published
    EXPECT_EQ(h.pop(chain), PopStatus::empty);
    h.driver->publish();
    EXPECT_EQ(h.pop(chain), PopStatus::ok);
}

TYPED_TEST(DeviceRingContract, pops_a_chain_with_its_readable_and_writable_segments) {
    typename TestFixture::Harness h(8, false);
    h.post(5, 1, /*readable=*/2, /*writable=*/1);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    EXPECT_EQ(chain.readable_segments, 2);
    EXPECT_EQ(chain.writable_segments, 1);
    EXPECT_EQ(chain.readable_bytes, 2 * h.kSegmentBytes);
    EXPECT_EQ(chain.writable_bytes, h.kSegmentBytes);
    EXPECT_GE(chain.slots, 1);
    EXPECT_LE(chain.slots, 3);
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(h.iov[i].iov_base, h.buffer_host(5 * 4 + i)) << "segment " << i;
        EXPECT_EQ(h.iov[i].iov_len, h.kSegmentBytes);
    }
    EXPECT_EQ(h.pop(chain), PopStatus::empty);
}

TYPED_TEST(DeviceRingContract, returns_a_completion_with_the_cookie_and_written_length) {
    typename TestFixture::Harness h(8, false);
    h.post(7, 1, 0, 1);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    h.complete(chain, 42);
    h.device.publish_used();
    const auto done = h.reclaim_all();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].cookie, 7u);
    EXPECT_EQ(done[0].len, 42u);
    EXPECT_EQ(h.driver->chains_in_flight(), 0);
}

TYPED_TEST(DeviceRingContract, keeps_a_batch_invisible_until_publish_used) {
    typename TestFixture::Harness h(16, false);
    h.post(0, 5, 1, 1);
    PoppedChain chain;
    for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(h.pop(chain), PopStatus::ok);
        h.complete(chain, 10);
        EXPECT_EQ(h.driver->used_pending(), 0) << "after add_used " << i;
    }
    h.device.publish_used();
    EXPECT_EQ(h.driver->used_pending(), 5);
    EXPECT_EQ(h.reclaim_all().size(), 5u);
}

TYPED_TEST(DeviceRingContract, completes_chains_out_of_order) {
    typename TestFixture::Harness h(8, false);
    h.post(0, 3, 2, 0);
    PoppedChain chains[3];
    for (auto& c : chains) {
        ASSERT_EQ(h.pop(c), PopStatus::ok);
    }
    h.complete(chains[2]);
    h.complete(chains[0]);
    h.device.publish_used();
    auto done = h.reclaim_all();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].cookie, 2u);
    EXPECT_EQ(done[1].cookie, 0u);
    h.complete(chains[1]);
    h.device.publish_used();
    done = h.reclaim_all();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].cookie, 1u);
    h.post(10, 3, 2, 0);  // every slot is free again
    EXPECT_EQ(h.pop_and_complete_all(), 3u);
}

// pop_burst is pops in a row in one call: the same chains, iovecs one
// after another, positions, and the status that ended it.
TYPED_TEST(DeviceRingContract, pop_burst_gives_what_pops_in_a_row_give) {
    typename TestFixture::Harness h(16, false);
    typename TestFixture::Harness reference(16, false);
    for (auto* r : {&h, &reference}) {
        r->post(0, 3, 1, 0);
        r->post(3, 2, 2, 1);
        r->post(5, 2, 0, 1);
    }
    std::array<PoppedChain, 8> chains{};
    std::array<RingPosition, 9> before{};
    const BurstPop got = h.device.pop_burst(h.iov, chains, before);
    EXPECT_EQ(got.status, PopStatus::empty);
    ASSERT_EQ(got.count, 7);
    size_t at = 0;
    for (uint16_t i = 0; i < got.count; ++i) {
        EXPECT_EQ(before[i], reference.device.position()) << "chain " << i;
        PoppedChain one;
        ASSERT_EQ(reference.pop(one), PopStatus::ok);
        EXPECT_EQ(chains[i].id, one.id) << "chain " << i;
        EXPECT_EQ(chains[i].slots, one.slots) << "chain " << i;
        EXPECT_EQ(chains[i].readable_segments, one.readable_segments) << "chain " << i;
        EXPECT_EQ(chains[i].writable_segments, one.writable_segments) << "chain " << i;
        for (uint32_t k = 0; k < one.segment_count(); ++k) {
            // Two harnesses, two memories: the same buffer is the same offset.
            EXPECT_EQ(static_cast<const char*>(h.iov[at + k].iov_base) -
                          static_cast<const char*>(h.buffer_host(0)),
                      static_cast<const char*>(reference.iov[k].iov_base) -
                          static_cast<const char*>(reference.buffer_host(0)))
                << "chain " << i;
            EXPECT_EQ(h.iov[at + k].iov_len, reference.iov[k].iov_len) << "chain " << i;
        }
        at += one.segment_count();
    }
    EXPECT_EQ(before[got.count], reference.device.position());
    EXPECT_EQ(h.device.vring_base(), reference.device.vring_base());
    // Completed in one batch, as ever.
    for (uint16_t i = 0; i < got.count; ++i) {
        h.complete(chains[i]);
    }
    h.device.publish_used();
    EXPECT_EQ(h.reclaim_all().size(), 7u);
}

TYPED_TEST(DeviceRingContract, pop_burst_stops_at_a_chain_without_room_and_leaves_it) {
    typename TestFixture::Harness h(8, false);
    h.post(0, 1, 1, 0);
    h.post(1, 1, 3, 0);
    std::array<PoppedChain, 4> chains{};
    const BurstPop got = h.device.pop_burst(std::span<iovec>(h.iov.data(), 3), chains, {});
    EXPECT_EQ(got.status, PopStatus::too_many_segments);
    EXPECT_EQ(got.count, 1);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    EXPECT_EQ(chain.id, 1);
}

TYPED_TEST(DeviceRingContract, leaves_a_chain_that_needs_more_iovecs_for_a_retry) {
    typename TestFixture::Harness h(8, false);
    h.post(3, 1, 3, 0);
    PoppedChain chain;
    const RingPosition before = h.device.position();
    EXPECT_EQ(h.pop(chain, 2), PopStatus::too_many_segments);
    EXPECT_EQ(h.device.position(), before);
    ASSERT_EQ(h.pop(chain, 3), PopStatus::ok);
    EXPECT_EQ(chain.readable_segments, 3);
    h.complete(chain);
    h.device.publish_used();
    ASSERT_EQ(h.reclaim_all().at(0).cookie, 3u);
}

TYPED_TEST(DeviceRingContract, skip_consumes_a_chain_pop_refused_and_completes_it_unmapped) {
    typename TestFixture::Harness h(8, false);
    h.post(5, 1, 3, 0);
    h.post(6, 1, 1, 0);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain, 2), PopStatus::too_many_segments);
    ASSERT_EQ(h.device.skip(chain), PopStatus::ok);
    EXPECT_EQ(chain.readable_segments + chain.writable_segments, 0u);  // nothing mapped
    h.complete(chain);
    ASSERT_EQ(h.pop(chain), PopStatus::ok);  // the ring goes on with the next chain
    EXPECT_EQ(chain.readable_segments, 1);
    h.complete(chain);
    h.device.publish_used();
    const auto done = h.reclaim_all();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].cookie, 5u);
    EXPECT_EQ(done[1].cookie, 6u);
    EXPECT_EQ(h.device.skip(chain), PopStatus::empty);
    EXPECT_FALSE(h.device.enable_notifications());  // a skipped chain is not new work
}

// ---- rewind ----------------------------------------------------------------------

TYPED_TEST(DeviceRingContract, rewind_gives_back_chains_that_are_popped_again_in_order) {
    typename TestFixture::Harness h(8, false);
    h.post(0, 4, 1, 1);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    const RingPosition mark = h.device.position();
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    h.device.rewind(mark);
    EXPECT_EQ(h.device.position(), mark);
    std::vector<uint16_t> ids;
    while (h.pop(chain) == PopStatus::ok) {
        ids.push_back(chain.id);
    }
    EXPECT_EQ(ids.size(), 3u);  // the two given back, then the never-popped one
    h.device.rewind(mark);
    h.pop_and_complete_all();
    // Chain 0 was popped before the mark and never completed: three come back now.
    EXPECT_EQ(h.reclaim_all().size(), 3u);
}

TYPED_TEST(DeviceRingContract, rewind_across_the_ring_end_restores_the_same_chains) {
    typename TestFixture::Harness h(4, false);
    h.post(0, 3, 1, 0);
    EXPECT_EQ(h.pop_and_complete_all(), 3u);
    h.reclaim_all();
    h.post(10, 3, 1, 0);  // slots 3, 0, 1 (the ring end is crossed)
    PoppedChain first;
    const RingPosition mark = h.device.position();
    ASSERT_EQ(h.pop(first), PopStatus::ok);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    h.device.rewind(mark);
    PoppedChain again;
    ASSERT_EQ(h.pop(again), PopStatus::ok);
    EXPECT_EQ(again.id, first.id);
    EXPECT_EQ(h.iov[0].iov_base, h.buffer_host(10 * 4));
}

// ---- kick suppression (driver -> device) ----------------------------------------

TYPED_TEST(DeviceRingContract, enable_notifications_is_true_when_a_buffer_came_while_disabled) {
    for (bool event_idx : {false, true}) {
        typename TestFixture::Harness h(8, event_idx);
        h.device.disable_notifications();
        h.post(0, 1);
        EXPECT_TRUE(h.device.enable_notifications()) << "event_idx=" << event_idx;
        EXPECT_EQ(h.pop_and_complete_all(), 1u);
        EXPECT_FALSE(h.device.enable_notifications()) << "event_idx=" << event_idx;
    }
}

TYPED_TEST(DeviceRingContract, enable_notifications_after_rewind_is_false_without_new_buffers) {
    // Linux 6.18 livelock: a packet bigger than the posted buffers is given back; if enable
    // then reported new work the caller would retry the same buffers forever.
    for (bool event_idx : {false, true}) {
        typename TestFixture::Harness h(8, event_idx);
        h.post(0, 3, 0, 1);
        const RingPosition mark = h.device.position();
        PoppedChain chain;
        for (int i = 0; i < 3; ++i) {
            ASSERT_EQ(h.pop(chain), PopStatus::ok);
        }
        h.device.rewind(mark);
        EXPECT_FALSE(h.device.enable_notifications()) << "event_idx=" << event_idx;
        h.post(3, 1, 0, 1);
        EXPECT_TRUE(h.device.enable_notifications()) << "event_idx=" << event_idx;
        EXPECT_EQ(h.pop_and_complete_all(), 4u);
    }
}

TYPED_TEST(DeviceRingContract, enable_notifications_after_too_many_segments_is_false) {
    // A chain the caller could not fit was seen: it is not new work either.
    typename TestFixture::Harness h(8, false);
    h.post(0, 1, 3, 0);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain, 1), PopStatus::too_many_segments);
    EXPECT_FALSE(h.device.enable_notifications());
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
}

TYPED_TEST(DeviceRingContract, the_driver_kicks_only_while_the_device_asks_for_kicks) {
    for (bool event_idx : {false, true}) {
        SCOPED_TRACE(event_idx ? "event_idx" : "flags");
        typename TestFixture::Harness h(8, event_idx);
        EXPECT_FALSE(h.device.enable_notifications());
        h.post(0, 1);
        EXPECT_TRUE(h.driver->kick_needed());
        h.device.disable_notifications();
        h.post(1, 1);
        EXPECT_FALSE(h.driver->kick_needed());
        EXPECT_TRUE(h.device.enable_notifications());  // buffers are waiting: keep polling
        EXPECT_EQ(h.pop_and_complete_all(), 2u);
        EXPECT_FALSE(h.device.enable_notifications());
        h.post(2, 1);
        EXPECT_TRUE(h.driver->kick_needed());
        EXPECT_FALSE(h.driver->kick_needed());  // nothing new since the last check
    }
}

// ---- call suppression (device -> driver) ----------------------------------------

TYPED_TEST(DeviceRingContract, should_notify_follows_the_drivers_interrupt_suppression) {
    for (bool event_idx : {false, true}) {
        SCOPED_TRACE(event_idx ? "event_idx" : "flags");
        typename TestFixture::Harness h(8, event_idx);
        h.post(0, 3);
        PoppedChain chain;
        ASSERT_EQ(h.pop(chain), PopStatus::ok);
        h.complete(chain);
        h.device.publish_used();
        EXPECT_TRUE(h.device.should_notify());  // the first batch always gets a call
        h.driver->disable_interrupts();
        EXPECT_FALSE(h.device.wants_call(1));
        ASSERT_EQ(h.pop(chain), PopStatus::ok);
        h.complete(chain);
        h.device.publish_used();
        EXPECT_FALSE(h.device.should_notify());
        EXPECT_EQ(h.reclaim_all().size(), 2u);
        EXPECT_FALSE(h.driver->enable_interrupts());
        EXPECT_TRUE(h.device.wants_call(1));
        ASSERT_EQ(h.pop(chain), PopStatus::ok);
        h.complete(chain);
        h.device.publish_used();
        EXPECT_TRUE(h.device.should_notify());
    }
}

TYPED_TEST(DeviceRingContract, with_event_idx_calls_once_the_drivers_event_is_crossed) {
    typename TestFixture::Harness h(16, true);
    h.post(0, 6);
    PoppedChain chain;
    auto use_one = [&] {
        ASSERT_EQ(h.pop(chain), PopStatus::ok);
        h.complete(chain);
        h.device.publish_used();
    };
    use_one();
    ASSERT_TRUE(h.device.should_notify());
    h.reclaim_all();
    EXPECT_FALSE(h.driver->enable_interrupts_after(2));  // "call me at the third from now"
    use_one();
    EXPECT_FALSE(h.device.should_notify());
    use_one();
    EXPECT_FALSE(h.device.should_notify());
    use_one();
    EXPECT_TRUE(h.device.should_notify());
    use_one();
    EXPECT_FALSE(h.device.should_notify());  // already crossed
}

// wants_call(more): should_notify's answer for `more` entries not added
// yet, asked before they are. Asking changes nothing; the call stays
// should_notify's to decide.
TYPED_TEST(DeviceRingContract, wants_call_foretells_should_notify_without_changing_it) {
    typename TestFixture::Harness h(16, true);
    h.post(0, 6);
    PoppedChain chain;
    auto use_one = [&] {
        ASSERT_EQ(h.pop(chain), PopStatus::ok);
        h.complete(chain);
        h.device.publish_used();
    };
    EXPECT_TRUE(h.device.wants_call(1));  // nothing signalled yet
    use_one();
    ASSERT_TRUE(h.device.should_notify());
    h.reclaim_all();
    EXPECT_FALSE(h.driver->enable_interrupts_after(2));  // "call me at the third from now"
    EXPECT_FALSE(h.device.wants_call(1));
    EXPECT_FALSE(h.device.wants_call(2));
    EXPECT_TRUE(h.device.wants_call(3));
    EXPECT_TRUE(h.device.wants_call(3));
    use_one();
    use_one();
    EXPECT_FALSE(h.device.should_notify());
    EXPECT_TRUE(h.device.wants_call(1));
    use_one();
    EXPECT_TRUE(h.device.should_notify());
    EXPECT_FALSE(h.device.wants_call(1));  // crossed: no call until the driver re-arms
}

TYPED_TEST(DeviceRingContract, should_notify_is_true_once_for_a_batch_that_crosses_the_event) {
    typename TestFixture::Harness h(16, true);
    h.post(0, 1);
    h.pop_and_complete_all();
    ASSERT_TRUE(h.device.should_notify());
    h.reclaim_all();
    h.driver->enable_interrupts();
    h.post(1, 5);
    EXPECT_EQ(h.pop_and_complete_all(), 5u);
    EXPECT_TRUE(h.device.should_notify());
    EXPECT_FALSE(h.device.should_notify());  // nothing new since
}

// ---- vring base -------------------------------------------------------------------

TYPED_TEST(DeviceRingContract, a_restarted_ring_continues_from_the_exported_base) {
    using Model = TypeParam;
    typename TestFixture::Harness h(8, true);
    // Run past the ring end once so the base carries a wrap.
    for (uint32_t round = 0; round < 3; ++round) {
        h.post(round * 3, 3, 1, 1);
        ASSERT_EQ(h.pop_and_complete_all(1), 3u);
        ASSERT_EQ(h.reclaim_all().size(), 3u);
    }
    h.post(100, 2, 1, 1);
    PoppedChain chain;
    ASSERT_EQ(h.pop(chain), PopStatus::ok);  // one taken and completed, one left in the ring
    h.complete(chain, 1);
    h.device.publish_used();
    const uint32_t base = h.device.vring_base();  // GET_VRING_BASE

    auto restarted = Model::make_device(*h.driver, h.config);  // SET_VRING_BASE on a new ring
    ASSERT_EQ(restarted.restore_vring_base(base), BaseError::ok);
    EXPECT_EQ(restarted.vring_base(), base);
    h.device = std::move(restarted);
    ASSERT_EQ(h.pop(chain), PopStatus::ok);
    EXPECT_EQ(h.iov[0].iov_base, h.buffer_host(101 * 4));
    h.complete(chain, 1);
    h.device.publish_used();
    const auto done = h.reclaim_all();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].cookie, 100u);
    EXPECT_EQ(done[1].cookie, 101u);
}

TYPED_TEST(DeviceRingContract, the_base_round_trips_at_every_position_of_several_laps) {
    using Model = TypeParam;
    for (uint16_t size : {uint16_t{1}, uint16_t{2}, uint16_t{3}, uint16_t{8}}) {
        if (!Model::supports_size(size)) {
            continue;
        }
        SCOPED_TRACE(::testing::Message() << "size " << size);
        typename TestFixture::Harness h(size, true);
        for (uint32_t step = 0; step < 4u * size + 3; ++step) {
            h.post(step, 1);
            ASSERT_EQ(h.pop_and_complete_all(), 1u);
            ASSERT_EQ(h.reclaim_all().size(), 1u);
            const uint32_t base = h.device.vring_base();
            auto restarted = Model::make_device(*h.driver, h.config);
            ASSERT_EQ(restarted.restore_vring_base(base), BaseError::ok);
            ASSERT_EQ(restarted.vring_base(), base) << "step " << step;
            h.device = std::move(restarted);
        }
    }
}

TYPED_TEST(DeviceRingContract, refuses_a_base_it_cannot_represent_and_keeps_its_place) {
    typename TestFixture::Harness h(8, false);
    h.post(0, 3);
    ASSERT_EQ(h.pop_and_complete_all(), 3u);
    const uint32_t base = h.device.vring_base();
    EXPECT_NE(h.device.restore_vring_base(0xffff'ffffu), BaseError::ok);
    EXPECT_EQ(h.device.vring_base(), base);
}

// ---- laps -------------------------------------------------------------------------

// Sizes where the ring end is interesting: 1 (every chain wraps), 2, 3 (not
// a power of two: packed only), 256 and the maximum.
template <typename Model>
std::vector<uint16_t> lap_sizes() {
    std::vector<uint16_t> sizes;
    for (uint32_t s : {1u, 2u, 3u, 256u, 32768u}) {
        if (Model::supports_size(s)) {
            sizes.push_back(static_cast<uint16_t>(s));
        }
    }
    return sizes;
}

TYPED_TEST(DeviceRingContract, wraps_around_the_ring_end_for_many_laps) {
    using Model = TypeParam;
    for (uint16_t size : lap_sizes<Model>()) {
        for (bool event_idx : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "size " << size << " event_idx " << event_idx);
            typename TestFixture::Harness h(size, event_idx);
            const uint32_t laps = size > 1000 ? 3 : 40;
            uint32_t cookie = 0;
            int64_t last_cookie = -1;
            uint64_t chains = 0;
            while (chains < uint64_t{laps} * size) {
                // Batches of chains of 1..3 segments, as many as fit.
                const uint16_t segs = static_cast<uint16_t>(1 + cookie % 3);
                uint32_t posted = 0;
                while (h.driver->free_descriptors() >= segs && posted < 50 &&
                       h.add(cookie, 1, static_cast<uint16_t>(segs - 1))) {
                    ++cookie;
                    ++posted;
                }
                h.driver->publish();
                if (posted == 0) {
                    ++cookie;  // a chain too long for this ring: try a shorter one
                    continue;
                }
                PoppedChain chain;
                uint32_t popped = 0;
                while (h.pop(chain) == PopStatus::ok) {
                    ASSERT_EQ(chain.readable_segments, 1);
                    h.complete(chain, chain.writable_bytes);
                    ++popped;
                }
                ASSERT_EQ(popped, posted);
                h.device.publish_used();
                (void)h.device.should_notify();
                const auto done = h.reclaim_all();
                ASSERT_EQ(done.size(), posted);
                for (const auto& c : done) {
                    // In posting order (cookies skipped above never entered the ring).
                    ASSERT_GT(int64_t{c.cookie}, last_cookie);
                    last_cookie = c.cookie;
                }
                chains += posted;
            }
            EXPECT_EQ(h.driver->chains_in_flight(), 0);
            EXPECT_EQ(h.driver->free_descriptors(), size);
        }
    }
}

// ---- hostile input: the rules both formats share, each with its exact error --------
//
// Each chain is set up twice, once refused by pop and once by pop_burst,
// which must agree. Rules only one format has (split: avail index, head and
// next ranges, loops; packed: ids, wrap bits, chain length, in-flight
// slots) are in that model's own tests.

template <typename Harness, typename Setup>
void expect_refused(PopStatus want, bool indirect, Setup setup) {
    ASSERT_TRUE(breaks_ring(want));
    for (bool burst : {false, true}) {
        SCOPED_TRACE(burst ? "pop_burst" : "pop");
        Harness h(8, false, indirect);
        setup(h);
        if (burst) {
            std::array<PoppedChain, 4> chains{};
            const BurstPop r = h.device.pop_burst(h.iov, chains, {});
            EXPECT_EQ(r.count, 0);
            EXPECT_EQ(r.status, want) << to_string(r.status);
        } else {
            PoppedChain chain;
            const PopStatus got = h.pop(chain);
            EXPECT_EQ(got, want) << to_string(got);
        }
    }
}

// Guest addresses in the harness's buffer pool: a table, and buffers well
// after it. kNowhere is mapped by nothing.
template <typename H>
uint64_t table_at(const H& h) {
    return h.buffer_gpa(0);
}
template <typename H>
uint64_t buffer_at(const H& h, uint32_t n) {
    return h.buffer_gpa(8 + n);  // after the largest table (9 entries: 144 bytes)
}
constexpr uint64_t kNowhere = 0x10;

TYPED_TEST(DeviceRingContract, refuses_indirect_without_the_negotiated_feature) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::indirect_not_negotiated, /*indirect=*/false, [](H& h) {
        h.write_table(table_at(h), {{buffer_at(h, 0), 64, 0}});
        h.post_raw({{table_at(h), 16, kRawIndirect}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_indirect_together_with_next) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::indirect_with_next, true, [](H& h) {
        h.write_table(table_at(h), {{buffer_at(h, 0), 64, 0}});
        h.post_raw({{table_at(h), 16, kRawIndirect | kRawNext}, {buffer_at(h, 1), 64, 0}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_an_indirect_table_inside_an_indirect_table) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::indirect_nested, true, [](H& h) {
        h.write_table(table_at(h), {{table_at(h) + 64, 16, kRawIndirect}});
        h.write_table(table_at(h) + 64, {{buffer_at(h, 0), 64, 0}});
        h.post_raw({{table_at(h), 16, kRawIndirect}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_an_indirect_table_not_a_multiple_of_16_bytes) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::indirect_bad_length, true, [](H& h) {
        h.write_table(table_at(h), {{buffer_at(h, 0), 64, kRawNext}, {buffer_at(h, 1), 64, 0}});
        h.post_raw({{table_at(h), 24, kRawIndirect}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_an_empty_indirect_table) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::indirect_bad_length, true, [](H& h) {
        h.post_raw({{table_at(h), 0, kRawIndirect}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_an_indirect_table_longer_than_the_queue) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::indirect_too_large, true, [](H& h) {
        // 9 entries in a queue of 8: each a buffer, linked where the format links.
        for (uint32_t i = 0; i < 9; ++i) {
            const uint16_t flags = i < 8 ? kRawNext : 0;
            h.write_table(table_at(h) + 16 * i, {{buffer_at(h, i), 64, flags}});
        }
        h.post_raw({{table_at(h), 9 * 16, kRawIndirect}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_an_indirect_table_outside_guest_memory) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::indirect_table_unmapped, true, [](H& h) {
        h.post_raw({{kNowhere, 16, kRawIndirect}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_a_readable_buffer_after_a_writable_one) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::readable_after_writable, false, [](H& h) {
        h.post_raw({{buffer_at(h, 0), 64, kRawWrite | kRawNext}, {buffer_at(h, 1), 64, 0}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_a_readable_entry_after_a_writable_one_in_a_table) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::readable_after_writable, true, [](H& h) {
        h.write_table(table_at(h),
                      {{buffer_at(h, 0), 64, kRawWrite | kRawNext}, {buffer_at(h, 1), 64, 0}});
        h.post_raw({{table_at(h), 32, kRawIndirect}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_a_buffer_outside_guest_memory) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::buffer_unmapped, false, [](H& h) {
        h.post_raw({{kNowhere, 64, 0}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_a_buffer_that_runs_past_the_end_of_guest_memory) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::buffer_unmapped, false, [](H& h) {
        // The pool's last buffer, four times as long as what is mapped of it.
        const uint64_t last = h.buffer_gpa(4u * 8 - 1);
        h.post_raw({{last, 4 * H::kSegmentBytes, kRawWrite}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_a_buffer_whose_end_wraps_past_2_pow_64) {
    using H = typename TestFixture::Harness;
    expect_refused<H>(PopStatus::buffer_unmapped, false, [](H& h) {
        h.post_raw({{UINT64_MAX - 4, 0x10, 0}});
    });
}

TYPED_TEST(DeviceRingContract, refuses_a_chain_of_2_pow_32_bytes) {
    using H = typename TestFixture::Harness;
    {
        GuestMemoryMap probe;
        if (!HugeRegion(probe).ok()) {
            GTEST_SKIP() << "cannot reserve 4 GiB of address space";
        }
    }
    std::vector<std::unique_ptr<HugeRegion>> huge;  // each outlives its harness
    expect_refused<H>(PopStatus::total_length_overflow, false, [&huge](H& h) {
        huge.push_back(std::make_unique<HugeRegion>(h.memory.map()));
        h.post_raw({{HugeRegion::kGpa, 0x8000'0000, kRawNext},
                    {HugeRegion::kGpa, 0x8000'0000, kRawWrite}});
    });
}

}  // namespace
}  // namespace vnet::virtio
