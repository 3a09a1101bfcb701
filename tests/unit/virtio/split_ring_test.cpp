#include "virtio/ring/split_ring.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>

#include "unit/virtio/test_ring.hpp"

namespace vnet::virtio {
namespace {

using test::GuestSplitRing;
using test::TestGuestMemory;

constexpr uint64_t kRingGpa = 0x10000;

// A guest with one split ring and the device-side SplitRing over it.
struct Queue {
    explicit Queue(uint16_t size = 8, bool event_idx = false, uint16_t last_avail = 0,
                   uint16_t used = 0)
        : guest(mem, kRingGpa, size), ring(guest.layout(), last_avail, used, event_idx) {
        guest.set_avail_idx(last_avail);
        guest.set_used_idx(used);
    }

    // Guest posts heads first, first+1, ... (mod size).
    void post(uint16_t count, uint16_t first = 0) {
        for (uint16_t i = 0; i < count; ++i) {
            guest.make_available(static_cast<uint16_t>((first + i) % guest.size()));
        }
    }

    uint16_t pop(uint16_t max) {
        error = PopStatus::ok;
        return ring.pop_avail(std::span<uint16_t>(heads.data(), max), &error);
    }

    // Device uses `count` heads and publishes them as one batch.
    void use_and_publish(uint16_t count) {
        for (uint16_t i = 0; i < count; ++i) {
            ring.add_used(i % guest.size(), 0);
        }
        ring.publish_used();
    }

    TestGuestMemory mem;
    uint8_t* region = mem.add_region(kRingGpa, 0x10000);
    GuestSplitRing guest;
    SplitRing ring;
    std::array<uint16_t, 64> heads{};
    PopStatus error = PopStatus::ok;
};

// ---- vring_need_event (virtio 1.2 §2.7.10) ----------------------------------

TEST(VringNeedEvent, is_true_when_the_event_index_was_crossed) {
    EXPECT_TRUE(vring_need_event(5, 6, 5));   // event 5 used by this batch
    EXPECT_TRUE(vring_need_event(5, 10, 3));  // crossed inside a bigger batch
    EXPECT_FALSE(vring_need_event(5, 5, 3));  // not reached yet
    EXPECT_FALSE(vring_need_event(5, 9, 6));  // crossed by an earlier batch
    EXPECT_FALSE(vring_need_event(5, 5, 5));  // nothing new
}

TEST(VringNeedEvent, stays_correct_across_the_16_bit_wrap) {
    // Batch 65534 -> 1 crosses 65535 and 0.
    EXPECT_TRUE(vring_need_event(65534, 1, 65534));
    EXPECT_TRUE(vring_need_event(65535, 1, 65534));
    EXPECT_TRUE(vring_need_event(0, 1, 65534));
    EXPECT_FALSE(vring_need_event(1, 1, 65534));
    EXPECT_FALSE(vring_need_event(65533, 1, 65534));
    // Batch 65535 -> 0 uses exactly entry 65535.
    EXPECT_TRUE(vring_need_event(65535, 0, 65535));
    EXPECT_FALSE(vring_need_event(0, 0, 65535));
    EXPECT_FALSE(vring_need_event(65534, 0, 65535));
    // Batch 0 -> 2 after the wrap.
    EXPECT_TRUE(vring_need_event(0, 2, 0));
    EXPECT_TRUE(vring_need_event(1, 2, 0));
    EXPECT_FALSE(vring_need_event(65535, 2, 0));
    EXPECT_FALSE(vring_need_event(2, 2, 0));
}

// ---- avail side ---------------------------------------------------------------

TEST(SplitRing, pops_a_batch_of_heads_in_avail_order) {
    Queue q(8);
    q.guest.make_available(3);
    q.guest.make_available(0);
    q.guest.make_available(7);
    ASSERT_EQ(q.pop(8), 3);
    EXPECT_EQ(q.error, PopStatus::ok);
    EXPECT_EQ(q.heads[0], 3);
    EXPECT_EQ(q.heads[1], 0);
    EXPECT_EQ(q.heads[2], 7);
    EXPECT_EQ(q.ring.last_avail_idx(), 3);
    EXPECT_EQ(q.pop(8), 0);
}

TEST(SplitRing, pops_no_more_than_the_span_holds) {
    Queue q(8);
    q.post(5);
    EXPECT_EQ(q.pop(2), 2);
    EXPECT_EQ(q.pop(2), 2);
    EXPECT_EQ(q.pop(2), 1);
    EXPECT_EQ(q.heads[0], 4);
}

TEST(SplitRing, rereads_avail_idx_only_when_the_cached_copy_is_exhausted) {
    Queue q(8);
    q.post(3);
    PopStatus error = PopStatus::ok;
    EXPECT_EQ(q.ring.avail_count(&error), 3);
    EXPECT_EQ(q.pop(1), 1);
    q.post(2, 3);  // the guest adds more; the cached idx still covers 2 entries
    EXPECT_EQ(q.ring.avail_count(&error), 2);
    EXPECT_EQ(q.pop(8), 2);
    EXPECT_EQ(q.ring.avail_count(&error), 2);  // exhausted: now idx is read again
    EXPECT_EQ(error, PopStatus::ok);
}

TEST(SplitRing, starts_at_the_base_set_by_the_front_end) {
    Queue q(8, false, /*last_avail=*/65534, /*used=*/65534);
    q.post(4, 2);
    ASSERT_EQ(q.pop(8), 4);
    EXPECT_EQ(q.heads[0], 2);
    EXPECT_EQ(q.heads[3], 5);
    EXPECT_EQ(q.ring.last_avail_idx(), 2);  // wrapped 65534 -> 2
}

TEST(SplitRing, pops_across_the_16_bit_avail_index_wrap) {
    Queue q(4, false, 65533);
    q.post(3, 1);  // avail slots 65533, 65534, 65535
    ASSERT_EQ(q.pop(8), 3);
    q.post(2, 0);  // slots 0, 1
    ASSERT_EQ(q.pop(8), 2);
    EXPECT_EQ(q.heads[0], 0);
    EXPECT_EQ(q.heads[1], 1);
    EXPECT_EQ(q.ring.last_avail_idx(), 2);
}

TEST(SplitRing, accepts_an_avail_index_jump_of_exactly_the_queue_size) {
    Queue q(8);
    q.post(8);
    EXPECT_EQ(q.pop(64), 8);
    EXPECT_EQ(q.error, PopStatus::ok);
}

TEST(SplitRing, rejects_an_avail_index_jump_larger_than_the_queue_size) {
    Queue q(8);
    q.guest.set_avail_idx(9);
    EXPECT_EQ(q.pop(64), 0);
    EXPECT_EQ(q.error, PopStatus::avail_index_jump);
    EXPECT_EQ(q.ring.last_avail_idx(), 0);
}

TEST(SplitRing, rejects_an_avail_index_that_moved_backwards) {
    Queue q(8, false, 100);
    q.guest.set_avail_idx(99);  // (u16)(99 - 100) = 65535 > 8
    EXPECT_EQ(q.pop(64), 0);
    EXPECT_EQ(q.error, PopStatus::avail_index_jump);
}

TEST(SplitRing, rejects_a_head_out_of_range_in_the_avail_ring) {
    Queue q(8);
    q.guest.make_available(1);
    q.guest.make_available(8);
    EXPECT_EQ(q.pop(64), 0);
    EXPECT_EQ(q.error, PopStatus::head_out_of_range);
    EXPECT_EQ(q.ring.last_avail_idx(), 0);  // nothing was taken
}

TEST(SplitRing, unpop_then_pop_returns_the_same_heads) {
    Queue q(8);
    q.guest.make_available(6);
    q.guest.make_available(2);
    q.guest.make_available(4);
    ASSERT_EQ(q.pop(8), 3);
    q.ring.unpop_avail(2);
    EXPECT_EQ(q.ring.last_avail_idx(), 1);
    ASSERT_EQ(q.pop(8), 2);
    EXPECT_EQ(q.heads[0], 2);
    EXPECT_EQ(q.heads[1], 4);
}

TEST(SplitRing, unpop_across_the_16_bit_wrap_returns_the_same_heads) {
    Queue q(8, false, 65535);
    q.post(3, 5);
    ASSERT_EQ(q.pop(8), 3);
    q.ring.unpop_avail(3);
    EXPECT_EQ(q.ring.last_avail_idx(), 65535);
    ASSERT_EQ(q.pop(8), 3);
    EXPECT_EQ(q.heads[0], 5);
    EXPECT_EQ(q.heads[2], 7);
}

// ---- used side ------------------------------------------------------------

TEST(SplitRing, add_used_stays_invisible_until_publish_used) {
    Queue q(8);
    q.ring.add_used(3, 100);
    q.ring.add_used(5, 200);
    EXPECT_EQ(q.guest.used_idx(), 0);  // entries written, index not moved
    EXPECT_EQ(q.guest.used_elem(0).id, 3u);
    EXPECT_EQ(q.guest.used_elem(1).len, 200u);
    EXPECT_EQ(q.ring.used_idx(), 2);
    q.ring.publish_used();
    EXPECT_EQ(q.guest.used_idx(), 2);  // one store for the whole batch
}

TEST(SplitRing, writes_used_entries_at_the_index_modulo_the_queue_size) {
    Queue q(4, false, 0, /*used=*/65535);
    q.ring.add_used(1, 11);  // slot 65535 & 3 = 3
    q.ring.add_used(2, 22);  // slot 0
    q.ring.publish_used();
    EXPECT_EQ(q.guest.used_elem(3).id, 1u);
    EXPECT_EQ(q.guest.used_elem(3).len, 11u);
    EXPECT_EQ(q.guest.used_elem(0).id, 2u);
    EXPECT_EQ(q.guest.used_idx(), 1);
}

// ---- notifications (device -> guest) -------------------------------------

TEST(SplitRing, notifies_without_event_idx_unless_no_interrupt_is_set) {
    Queue q(8, /*event_idx=*/false);
    q.use_and_publish(1);
    EXPECT_TRUE(q.ring.should_notify());
    q.guest.set_avail_flags(VirtqAvail::kFlagNoInterrupt);
    q.use_and_publish(1);
    EXPECT_FALSE(q.ring.should_notify());
    q.guest.set_avail_flags(0);
    EXPECT_TRUE(q.ring.should_notify());
}

TEST(SplitRing, with_event_idx_ignores_no_interrupt) {
    Queue q(8, /*event_idx=*/true);
    q.guest.set_avail_flags(VirtqAvail::kFlagNoInterrupt);
    q.guest.set_used_event(0);
    q.use_and_publish(1);
    EXPECT_TRUE(q.ring.should_notify());
}

TEST(SplitRing, with_event_idx_always_notifies_the_first_batch) {
    Queue q(8, true);
    q.guest.set_used_event(100);  // would say "no"
    q.use_and_publish(1);
    EXPECT_TRUE(q.ring.should_notify());
}

TEST(SplitRing, with_event_idx_notifies_only_when_used_event_is_crossed) {
    Queue q(8, true);
    q.use_and_publish(1);
    ASSERT_TRUE(q.ring.should_notify());  // signalled at 1
    q.guest.set_used_event(3);            // "call me once entry 3 is used"
    q.use_and_publish(2);                 // 1 -> 3
    EXPECT_FALSE(q.ring.should_notify());
    q.use_and_publish(1);  // 3 -> 4 uses entry 3
    EXPECT_TRUE(q.ring.should_notify());
    q.use_and_publish(1);  // 4 -> 5: event already crossed
    EXPECT_FALSE(q.ring.should_notify());
}

TEST(SplitRing, with_event_idx_notifies_once_per_batch_that_crosses_used_event) {
    Queue q(8, true);
    q.use_and_publish(1);
    ASSERT_TRUE(q.ring.should_notify());
    q.guest.set_used_event(2);
    q.use_and_publish(5);  // 1 -> 6 crosses 2
    EXPECT_TRUE(q.ring.should_notify());
    EXPECT_FALSE(q.ring.should_notify());  // nothing new since the last call
}

TEST(SplitRing, with_event_idx_should_notify_with_used_event_before_the_wrap) {
    Queue q(8, true, 0, /*used=*/65533);
    q.use_and_publish(1);
    ASSERT_TRUE(q.ring.should_notify());  // signalled at 65534
    q.guest.set_used_event(65535);
    q.use_and_publish(3);  // 65534 -> 1 crosses 65535
    EXPECT_TRUE(q.ring.should_notify());
}

TEST(SplitRing, with_event_idx_should_notify_with_used_event_after_the_wrap) {
    Queue q(8, true, 0, /*used=*/65534);
    q.use_and_publish(1);
    ASSERT_TRUE(q.ring.should_notify());  // signalled at 65535
    q.guest.set_used_event(0);
    q.use_and_publish(1);  // 65535 -> 0: entry 65535 used, not entry 0
    EXPECT_FALSE(q.ring.should_notify());
    q.use_and_publish(1);  // 0 -> 1: entry 0 used
    EXPECT_TRUE(q.ring.should_notify());
}

TEST(SplitRing, with_event_idx_notifies_after_used_idx_wraps_past_the_last_signal) {
    Queue q(8, true);
    q.use_and_publish(1);
    ASSERT_TRUE(q.ring.should_notify());  // signalled at 1
    // 65536 entries later used_idx is 1 again: (u16)(new - old) == 0 would say "no call",
    // but the guest has missed a whole lap (kernel vhost_add_used_n clears signalled_used_valid).
    q.guest.set_used_event(0);
    for (int i = 0; i < 65536; ++i) {
        q.ring.add_used(0, 0);
    }
    q.ring.publish_used();
    EXPECT_EQ(q.ring.used_idx(), 1);
    EXPECT_TRUE(q.ring.should_notify());
}

// ---- notifications (guest -> device) -------------------------------------

TEST(SplitRing, disable_sets_and_enable_clears_no_notify_without_event_idx) {
    Queue q(8, false);
    q.ring.disable_notifications();
    EXPECT_EQ(q.guest.used_flags(), VirtqUsed::kFlagNoNotify);
    EXPECT_FALSE(q.ring.enable_notifications());
    EXPECT_EQ(q.guest.used_flags(), 0);
}

TEST(SplitRing, with_event_idx_enable_writes_avail_event_and_disable_writes_nothing) {
    Queue q(8, true);
    q.post(3);
    ASSERT_EQ(q.pop(8), 3);
    q.ring.disable_notifications();
    EXPECT_EQ(q.guest.used_flags(), 0);
    EXPECT_FALSE(q.ring.enable_notifications());
    EXPECT_EQ(q.guest.avail_event(), 3);  // "kick me when avail idx passes 3"
    EXPECT_EQ(q.guest.used_flags(), 0);
}

TEST(SplitRing, enable_notifications_returns_true_when_avail_moved_before_the_recheck) {
    for (bool event_idx : {false, true}) {
        Queue q(8, event_idx);
        q.post(2);
        ASSERT_EQ(q.pop(8), 2);
        q.ring.disable_notifications();
        q.post(1, 2);  // the guest adds a buffer while kicks are off: no kick comes
        EXPECT_TRUE(q.ring.enable_notifications()) << "event_idx=" << event_idx;
        ASSERT_EQ(q.pop(8), 1);
        EXPECT_EQ(q.heads[0], 2);
        EXPECT_FALSE(q.ring.enable_notifications());
    }
}

TEST(SplitRing, enable_notifications_after_unpop_is_false_without_new_buffers) {
    // Linux 6.18 livelock: a packet larger than the posted buffers is given back with
    // unpop; if enable then reported "new buffers" the caller would retry forever.
    for (bool event_idx : {false, true}) {
        Queue q(8, event_idx);
        q.post(3);
        ASSERT_EQ(q.pop(8), 3);
        q.ring.unpop_avail(3);
        EXPECT_FALSE(q.ring.enable_notifications()) << "event_idx=" << event_idx;
        if (event_idx) {
            EXPECT_EQ(q.guest.avail_event(), 3);  // the next kick is for a real new buffer
        }
        q.post(1, 3);
        EXPECT_TRUE(q.ring.enable_notifications());
        ASSERT_EQ(q.pop(8), 4);  // the given-back heads, then the new one
        EXPECT_EQ(q.heads[0], 0);
        EXPECT_EQ(q.heads[3], 3);
    }
}

TEST(SplitRing, enable_notifications_is_true_while_posted_heads_were_never_popped) {
    Queue q(8);
    q.post(4);
    ASSERT_EQ(q.pop(2), 2);
    EXPECT_TRUE(q.ring.enable_notifications());  // kernel semantics: heads 2 and 3 are waiting
    q.ring.unpop_avail(1);
    EXPECT_TRUE(q.ring.enable_notifications());  // giving one back does not hide the others
}

TEST(SplitRing, enable_notifications_is_false_once_given_back_heads_were_popped_again) {
    Queue q(8);
    q.post(3);
    ASSERT_EQ(q.pop(8), 3);
    q.ring.unpop_avail(2);
    ASSERT_EQ(q.pop(1), 1);
    EXPECT_FALSE(q.ring.enable_notifications());  // one head still given back, nothing new
    ASSERT_EQ(q.pop(8), 1);
    EXPECT_FALSE(q.ring.enable_notifications());
}

TEST(SplitRing, a_jump_seen_by_enable_notifications_is_reported_by_the_next_pop) {
    Queue q(8, true);
    q.guest.set_avail_idx(20);
    EXPECT_TRUE(q.ring.enable_notifications());
    EXPECT_EQ(q.pop(8), 0);
    EXPECT_EQ(q.error, PopStatus::avail_index_jump);
}

TEST(SplitRing, names_every_error) {
    EXPECT_EQ(std::string(to_string(PopStatus::ok)), "ok");
    EXPECT_NE(std::string(to_string(PopStatus::avail_index_jump)),
              std::string(to_string(PopStatus::head_out_of_range)));
}

}  // namespace
}  // namespace vnet::virtio
