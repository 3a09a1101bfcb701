// NetRxQueue over both ring models: buffers lent to a source, num_buffers
// with and without MRG_RXBUF, the window kept across bursts and given
// back at finish, coalescing
// and call decisions.
#include <gtest/gtest.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "unit/virtio/net/net_queue_harness.hpp"
#include "virtio/net/net_rx_queue.hpp"
#include "virtio/net_header.hpp"

namespace vnet::virtio {
namespace {

using packet::DropReason;
using test::ModelNames;
using test::RingModels;

// The stream pacer's frame budget on the 256-entry rings below: three
// quarters of the ring.
constexpr uint16_t kStreamBudget = 256 - 256 / 4;

uint64_t g_now_ns = 0;
uint64_t fake_clock() {
    return g_now_ns;
}

template <typename Model>
class NetRxQueueTest : public ::testing::Test {
protected:
    struct Harness : test::NetQueueHarness<Model, NetRxQueue> {
        Harness(uint16_t size, bool event_idx, const NetQueueConfig& config)
            : test::NetQueueHarness<Model, NetRxQueue>(size, event_idx, config, &fake_clock) {}

        // One packet of `len` bytes (header included) into the next buffer,
        // as a tap read would write it.
        bool deliver(uint32_t len, uint32_t max_packet = 1514) {
            std::span<const iovec> buffer;
            if (!this->queue.next_buffer(max_packet, &buffer)) {
                return false;
            }
            uint32_t left = len;
            for (const iovec& v : buffer) {
                const auto n = static_cast<uint32_t>(std::min<size_t>(left, v.iov_len));
                std::memset(v.iov_base, 0xab, n);
                left -= n;
            }
            this->queue.commit_buffer(len);
            return true;
        }
        uint16_t num_buffers(uint32_t buffer) const {
            uint16_t n = 0;
            std::memcpy(&n,
                        static_cast<const uint8_t*>(this->ring.buffer_host(buffer)) +
                            offsetof(NetHeader, num_buffers),
                        sizeof n);
            return n;
        }
        std::vector<uint32_t> reclaimed_cookies() {
            std::vector<uint32_t> cookies;
            for (const frontend::Completion& c : this->ring.reclaim_all()) {
                cookies.push_back(c.cookie);
            }
            return cookies;
        }
    };
    void SetUp() override { g_now_ns = 5000; }
};
TYPED_TEST_SUITE(NetRxQueueTest, RingModels, ModelNames);

TYPED_TEST(NetRxQueueTest, fills_one_buffer_per_packet_without_mrg_rxbuf) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    h.ring.post(0, 2, /*readable=*/0, /*writable=*/1);
    ASSERT_TRUE(h.deliver(60, 64));
    ASSERT_TRUE(h.deliver(64, 64));
    EXPECT_TRUE(h.queue.flush());
    const auto done = h.ring.reclaim_all();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].cookie, 0u);
    EXPECT_EQ(done[0].len, 60u);
    EXPECT_EQ(done[1].len, 64u);
    EXPECT_EQ(h.num_buffers(0), 1);  // VERSION_1: always written, always 1
    EXPECT_EQ(h.num_buffers(4), 1);
    EXPECT_EQ(h.counters.packets.get(), 2u);
    EXPECT_EQ(h.counters.bytes.get(), 60u + 64u - 2 * 12);
}

TYPED_TEST(NetRxQueueTest, counts_a_packet_truncated_by_a_small_buffer_and_reuses_the_buffer) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    h.ring.post(0, 1, 0, 1);
    ASSERT_TRUE(h.deliver(64, /*max_packet=*/100));  // the read filled all 64 bytes: truncated
    EXPECT_EQ(h.queue.flush(), false);
    EXPECT_EQ(h.drops(DropReason::rx_buffer_too_small), 1u);
    EXPECT_TRUE(h.ring.reclaim_all().empty());
    ASSERT_TRUE(h.deliver(50, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
}

TYPED_TEST(NetRxQueueTest, spreads_a_packet_over_several_buffers_with_mrg_rxbuf) {
    typename TestFixture::Harness h(16, false, test::mergeable_config());
    h.ring.post(0, 6, 0, 1);           // 64-byte buffers
    ASSERT_TRUE(h.deliver(150, 200));  // lent 4 buffers, filled 3
    ASSERT_TRUE(h.deliver(64, 64));    // the 4th, not the 5th
    EXPECT_TRUE(h.queue.flush());
    const auto done = h.ring.reclaim_all();
    ASSERT_EQ(done.size(), 4u);
    EXPECT_EQ(done[0].len, 64u);
    EXPECT_EQ(done[1].len, 64u);
    EXPECT_EQ(done[2].len, 22u);
    EXPECT_EQ(done[3].cookie, 3u);
    EXPECT_EQ(done[3].len, 64u);
    EXPECT_EQ(h.num_buffers(0), 3);
    EXPECT_EQ(h.num_buffers(3 * 4), 1);
    EXPECT_EQ(h.counters.packets.get(), 2u);
    EXPECT_EQ(h.counters.bytes.get(), 150u + 64u - 2 * 12);
}

TYPED_TEST(NetRxQueueTest, parks_when_the_guest_posted_too_little_for_a_merged_packet) {
    typename TestFixture::Harness h(16, false, test::mergeable_config());
    h.ring.post(0, 2, 0, 1);
    std::span<const iovec> buffer;
    EXPECT_FALSE(h.queue.next_buffer(200, &buffer));  // 128 bytes posted
    EXPECT_TRUE(h.queue.running());
    EXPECT_EQ(h.queue.take_fault(), nullptr);
    EXPECT_FALSE(h.queue.flush());
    h.ring.post(2, 2, 0, 1);
    ASSERT_TRUE(h.deliver(200, 200));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0, 1, 2, 3}));
    EXPECT_EQ(h.num_buffers(0), 4);
}

TYPED_TEST(NetRxQueueTest, keeps_unused_buffers_for_the_next_burst_and_gives_them_back_at_finish) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.ring.post(0, 8, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));  // the refill popped all 8 ahead
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    // The avail position (packed: its low 15 bits, the rest is the wrap
    // counter and the used position).
    auto avail_position = [&h] { return h.queue.vring_base() & 0x7fffu; };
    EXPECT_EQ(avail_position(), 8u);  // 7 kept lent, not popped again
    // Kept buffers are not new: the path may sleep.
    EXPECT_TRUE(h.queue.arm_kicks());
    ASSERT_TRUE(h.deliver(60, 64));
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{1, 2}));
    h.ring.post(8, 1, 0, 1);
    EXPECT_FALSE(h.queue.arm_kicks());  // a buffer the guest really posted
    // A lend that found nothing to read (commit never came) stays lent.
    std::span<const iovec> buffer;
    ASSERT_TRUE(h.queue.next_buffer(64, &buffer));
    EXPECT_FALSE(h.queue.flush());
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{3}));
    // Stopping gives every kept buffer back, in ring order.
    h.queue.finish();
    EXPECT_EQ(avail_position(), 4u);
}

TYPED_TEST(NetRxQueueTest, holds_the_publish_until_rx_frames_are_pending) {
    typename TestFixture::Harness h(32, false, test::version_1_config());
    EXPECT_FALSE(h.queue.set_coalescing(3, 0));
    h.ring.post(0, 16, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_TRUE(h.ring.reclaim_all().empty());
    EXPECT_EQ(h.queue.held_deadline(), NetRxQueue::kHeldUntilRoundEnd);
    EXPECT_FALSE(h.queue.flush());  // a turn that brought nothing is not counted
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.counters.publishes_coalesced.get(), 2u);
    EXPECT_EQ(h.counters.packets.get(), 0u);  // counted when the guest sees them
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0, 1, 2}));
    EXPECT_EQ(h.queue.held_deadline(), 0u);
    EXPECT_EQ(h.counters.packets.get(), 3u);
    EXPECT_EQ(h.counters.bursts.get(), 1u);
}

TYPED_TEST(NetRxQueueTest, sets_the_rx_usecs_deadline_once_and_publishes_held_frames) {
    typename TestFixture::Harness h(32, false, test::version_1_config());
    h.queue.set_coalescing(8, 50);
    h.ring.post(0, 16, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.queue.held_deadline(), 5000u + 50'000u);
    g_now_ns = 9000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.queue.held_deadline(), 5000u + 50'000u);  // the first held frame's
    EXPECT_TRUE(h.queue.publish_held());                  // the worker's timer fired
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0, 1}));
    EXPECT_FALSE(h.queue.publish_held());  // nothing left
}

TYPED_TEST(NetRxQueueTest, publishes_at_once_when_the_guest_runs_out_of_buffers) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.queue.set_coalescing(8, 0);
    h.ring.post(0, 2, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.deliver(60, 64));  // starved
    // Holding now would stall both sides: the guest refills when it sees used entries.
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0, 1}));
}

TYPED_TEST(NetRxQueueTest, turning_coalescing_off_publishes_what_was_held) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.queue.set_coalescing(4, 0);
    h.ring.post(0, 8, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_TRUE(h.queue.set_coalescing(0, 0));
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
}

// The adaptive default (set_coalescing(0, 0, stream)): a lone frame is
// published and called at once, a stream's bursts are held for the pacer's
// budget, and a lone frame after the stream went quiet is prompt again.
TYPED_TEST(NetRxQueueTest, adaptive_publishes_a_lone_frame_at_once_and_holds_a_stream) {
    typename TestFixture::Harness h(256, false, test::version_1_config());
    h.queue.set_coalescing(0, 0, /*stream=*/true);
    h.ring.post(0, 200, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());  // after silence: at once
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    // A stream: bursts right after a publish are held, for the first one's
    // budget, then published together with one call.
    g_now_ns += 2000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.queue.held_deadline(), g_now_ns + RxStreamPacer::kBudgetNs);
    g_now_ns += 5000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_TRUE(h.ring.reclaim_all().empty());
    g_now_ns += RxStreamPacer::kBudgetNs;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());  // the budget has passed: this flush publishes
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_EQ(h.queue.held_deadline(), 0u);
    // The tap goes quiet: a lone frame after silence is not held.
    g_now_ns += RxStreamPacer::kSilenceNs;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{4}));
    EXPECT_EQ(h.counters.bursts.get(), 3u);
}

// A conversation (the guest answered each frame before the next came, as a
// request/response or TCP's ACK clock does): each frame goes out at once
// however close together they come; a burst with no answer in between is
// held again.
TYPED_TEST(NetRxQueueTest, adaptive_publishes_at_once_to_a_guest_that_answered) {
    typename TestFixture::Harness h(256, false, test::version_1_config());
    h.queue.set_coalescing(0, 0, /*stream=*/true);
    h.ring.post(0, 200, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());  // after silence
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    for (uint32_t i = 1; i <= 3; ++i) {
        g_now_ns += 10000;  // a 10 us round trip, well inside the silence window
        h.queue.note_guest_sent();
        ASSERT_TRUE(h.deliver(60, 64));
        EXPECT_TRUE(h.queue.flush()) << "frame " << i;
        EXPECT_EQ(h.queue.held_deadline(), 0u);
        EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{i}));
    }
    // No answer since the last publish: a stream's burst, held.
    g_now_ns += 2000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.queue.held_deadline(), g_now_ns + RxStreamPacer::kBudgetNs);
    EXPECT_EQ(h.counters.bursts.get(), 4u);
}

TYPED_TEST(NetRxQueueTest, adaptive_publishes_the_frame_budget_at_once) {
    typename TestFixture::Harness h(256, false, test::version_1_config());
    h.queue.set_coalescing(0, 0, /*stream=*/true);
    h.ring.post(0, 200, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    h.ring.reclaim_all();
    g_now_ns += 1000;
    for (uint16_t i = 0; i + 1 < kStreamBudget; ++i) {
        ASSERT_TRUE(h.deliver(60, 64));
    }
    EXPECT_FALSE(h.queue.flush());
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());  // the budget's last frame: no waiting for the clock
    EXPECT_EQ(h.ring.reclaim_all().size(), kStreamBudget);
}

// Only a guest that would be woken is held for: one that is awake (its
// calls off, as while it polls) is shown a stream's bursts at once, and is
// held for again once it sleeps.
TYPED_TEST(NetRxQueueTest, adaptive_holds_nothing_for_an_awake_guest) {
    typename TestFixture::Harness h(256, false, test::version_1_config());
    h.queue.set_coalescing(0, 0, /*stream=*/true);
    h.ring.post(0, 200, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    h.ring.driver->disable_interrupts();
    g_now_ns += 2000;  // a stream's next burst
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());  // published; no call, the guest has them off
    EXPECT_EQ(h.queue.held_deadline(), 0u);
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{1}));
    EXPECT_FALSE(h.ring.driver->enable_interrupts());
    g_now_ns += 2000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.queue.held_deadline(), g_now_ns + RxStreamPacer::kBudgetNs);
    EXPECT_TRUE(h.ring.reclaim_all().empty());
}

// The same with a split ring's EVENT_IDX: a guest that has not moved its
// used_event since the last call is still working through that call's
// frames. (A packed driver says "awake" only with DISABLE, above: in its
// ENABLE mode it asks for every call.)
template <typename Model>
class NetRxQueueSplitOnly : public NetRxQueueTest<Model> {};
TYPED_TEST_SUITE(NetRxQueueSplitOnly, ::testing::Types<test::SplitModel>, ModelNames);

TYPED_TEST(NetRxQueueSplitOnly, adaptive_holds_only_once_the_guest_rearms_its_used_event) {
    typename TestFixture::Harness h(256, true, test::version_1_config());
    h.queue.set_coalescing(0, 0, /*stream=*/true);
    h.ring.post(0, 200, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    g_now_ns += 2000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());  // published: its event is behind, no call
    EXPECT_EQ(h.queue.held_deadline(), 0u);
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{1}));
    EXPECT_FALSE(h.ring.driver->enable_interrupts());  // drained, about to sleep
    g_now_ns += 2000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.queue.held_deadline(), g_now_ns + RxStreamPacer::kBudgetNs);
    EXPECT_TRUE(h.ring.reclaim_all().empty());
    EXPECT_TRUE(h.queue.publish_held());  // the hold's end wakes it
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{2}));
}

// No lost wake-up: the worker publishes a stream's held tail before it
// sleeps (publish_stream_held), while rx_frames holds keep their deadline.
TYPED_TEST(NetRxQueueTest, adaptive_hold_ends_before_the_owner_sleeps) {
    typename TestFixture::Harness h(256, false, test::version_1_config());
    h.queue.set_coalescing(0, 0, /*stream=*/true);
    h.ring.post(0, 200, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    h.ring.reclaim_all();
    g_now_ns += 1000;
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_TRUE(h.queue.publish_stream_held());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{1}));
    EXPECT_FALSE(h.queue.publish_stream_held());  // nothing left

    h.queue.set_coalescing(8, 1000, /*stream=*/true);  // explicit: overrides the default
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_FALSE(h.queue.publish_stream_held());
    EXPECT_NE(h.queue.held_deadline(), 0u);
    EXPECT_TRUE(h.queue.publish_held());
}

TYPED_TEST(NetRxQueueTest, adaptive_never_holds_when_the_guest_is_out_of_buffers) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.queue.set_coalescing(0, 0, /*stream=*/true);
    h.ring.post(0, 3, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    g_now_ns += 1000;
    ASSERT_TRUE(h.deliver(60, 64));
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.deliver(60, 64));  // starved
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0, 1, 2}));
}

// A big frame: the guest sees it as soon as it is written; the call and
// the counts still come once, at the flush.
TYPED_TEST(NetRxQueueTest, shows_a_big_frame_at_once_and_calls_once_at_flush) {
    typename TestFixture::Harness h(1024, true, test::mergeable_config());  // EVENT_IDX
    h.ring.post(0, 60, 0, /*writable=*/16);                                 // 1 KiB chains
    constexpr uint32_t kBig = NetRxQueue::kEarlyPublishBytes;
    constexpr uint32_t kBigChains = kBig / 1024;
    ASSERT_TRUE(h.deliver(kBig - 1, kBig));
    EXPECT_TRUE(h.ring.reclaim_all().empty());  // under kEarlyPublishBytes: at the flush
    ASSERT_TRUE(h.deliver(kBig, kBig));
    // Both visible before the burst ends (the small one was staged first).
    EXPECT_EQ(h.ring.reclaim_all().size(), 2 * kBigChains);
    EXPECT_EQ(h.counters.packets.get(), 0u);
    ASSERT_TRUE(h.deliver(100, kBig));
    EXPECT_TRUE(h.ring.reclaim_all().empty());
    EXPECT_TRUE(h.queue.flush());  // the one call, covering all three
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{2 * kBigChains}));
    EXPECT_EQ(h.counters.packets.get(), 3u);
    EXPECT_EQ(h.counters.bursts.get(), 1u);
    EXPECT_EQ(h.counters.bytes.get(), 2 * kBig - 1 + 100 - 3 * 12);
    EXPECT_FALSE(h.queue.flush());  // nothing new: no second call
}

TYPED_TEST(NetRxQueueTest, shows_nothing_early_while_coalescing_holds_publishes) {
    typename TestFixture::Harness h(1024, false, test::mergeable_config());
    h.queue.set_coalescing(8, 0);
    h.ring.post(0, 60, 0, 16);
    ASSERT_TRUE(h.deliver(NetRxQueue::kEarlyPublishBytes, NetRxQueue::kEarlyPublishBytes));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_TRUE(h.ring.reclaim_all().empty());
    EXPECT_EQ(h.counters.publishes_coalesced.get(), 1u);
}

TYPED_TEST(NetRxQueueTest, asks_for_no_call_the_guest_suppressed_or_has_no_fd_for) {
    typename TestFixture::Harness h(16, true, test::version_1_config());  // EVENT_IDX
    h.ring.post(0, 8, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    h.ring.driver->disable_interrupts();
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());  // published, but the guest wants no call
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{1}));
    h.ring.driver->enable_interrupts();
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());
    h.queue.set_calls_wanted(false);  // no call fd
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{2, 3}));
}

TYPED_TEST(NetRxQueueTest, stops_with_a_fault_on_a_device_readable_buffer) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    h.ring.post(0, 1, /*readable=*/1, /*writable=*/1);
    std::span<const iovec> buffer;
    EXPECT_FALSE(h.queue.next_buffer(64, &buffer));
    EXPECT_FALSE(h.queue.running());
    const RingFault* fault = h.queue.take_fault();
    ASSERT_NE(fault, nullptr);
    EXPECT_STREQ(fault->what, "RX descriptor chain");
    EXPECT_STREQ(fault->detail, "device-readable buffer in an RX chain");
}

TYPED_TEST(NetRxQueueTest, publishes_held_frames_at_finish_and_drops_them_when_memory_is_gone) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.queue.set_coalescing(8, 0);
    h.ring.post(0, 8, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_TRUE(h.queue.finish());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    h.queue.abandon();  // nothing left to drop
    EXPECT_EQ(h.drops(DropReason::no_destination), 0u);

    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    h.queue.abandon();  // the memory went away before finish could run
    EXPECT_EQ(h.drops(DropReason::no_destination), 1u);
}

// adaptive_rx: published at once, called later. Split rings only: a
// packed ring has no count of posted buffers, so it never defers (the
// call_deadline checks below), whatever its own call decision is.
TYPED_TEST(NetRxQueueTest, adaptive_calls_publish_at_once_and_defer_the_call_while_room_is_left) {
    constexpr bool split = std::is_same_v<TypeParam, test::SplitModel>;
    typename TestFixture::Harness h(16, true, test::version_1_config());  // EVENT_IDX
    EXPECT_FALSE(h.queue.set_adaptive_calls(true));
    h.ring.post(0, 16, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    const bool called = h.queue.flush();
    EXPECT_EQ(called, !split);
    // The guest sees the frame whether or not it is called.
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    EXPECT_EQ(h.queue.call_deadline(), split ? 5000u + NetRxQueue::kMaxCallDeferNs : 0u);
    g_now_ns = 9000;
    ASSERT_TRUE(h.deliver(60, 64));
    h.queue.flush();
    // The first deferred frame's deadline, not the latest's.
    EXPECT_EQ(h.queue.call_deadline(), split ? 5000u + NetRxQueue::kMaxCallDeferNs : 0u);
    if constexpr (split) {
        // One call covers both publishes (the guest's first call is always made).
        EXPECT_TRUE(h.queue.take_deferred_call());
    }
    EXPECT_EQ(h.queue.call_deadline(), 0u);
    EXPECT_FALSE(h.queue.take_deferred_call());  // made once
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{1}));
}

TYPED_TEST(NetRxQueueTest, adaptive_calls_call_at_once_when_an_eighth_of_the_ring_or_less_is_left) {
    constexpr bool split = std::is_same_v<TypeParam, test::SplitModel>;
    typename TestFixture::Harness h(16, true, test::version_1_config());
    h.queue.set_adaptive_calls(true);
    h.ring.post(0, 4, 0, 1);  // 4 buffers of a 16-entry ring
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_EQ(h.queue.flush(), !split);  // 3 left, more than 16 / 8: deferred
    ASSERT_TRUE(h.deliver(60, 64));
    const bool called = h.queue.flush();
    if constexpr (split) {
        EXPECT_TRUE(called);  // 2 left: the guest must run soon; one call for both
    }
    EXPECT_EQ(h.queue.call_deadline(), 0u);
    EXPECT_FALSE(h.queue.take_deferred_call());
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0, 1}));
}

TYPED_TEST(NetRxQueueTest, adaptive_calls_ask_only_for_calls_the_guest_wants) {
    typename TestFixture::Harness h(16, true, test::version_1_config());
    h.ring.post(0, 16, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_TRUE(h.queue.flush());  // the first call, before adaptive calls are on
    h.queue.set_adaptive_calls(true);
    h.ring.driver->disable_interrupts();
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_FALSE(h.queue.take_deferred_call());  // published, but the guest wants no call
    h.queue.set_calls_wanted(false);             // no call fd: nothing is deferred
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_FALSE(h.queue.flush());
    EXPECT_EQ(h.queue.call_deadline(), 0u);
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0, 1, 2}));
}

TYPED_TEST(NetRxQueueTest, adaptive_calls_turned_off_or_stopped_make_the_deferred_call) {
    constexpr bool split = std::is_same_v<TypeParam, test::SplitModel>;
    typename TestFixture::Harness h(16, true, test::version_1_config());
    h.queue.set_adaptive_calls(true);
    h.ring.post(0, 16, 0, 1);
    ASSERT_TRUE(h.deliver(60, 64));
    EXPECT_EQ(h.queue.flush(), !split);
    EXPECT_EQ(h.queue.set_adaptive_calls(false), split);
    EXPECT_EQ(h.queue.call_deadline(), 0u);

    h.queue.set_adaptive_calls(true);
    EXPECT_EQ(h.reclaimed_cookies(), (std::vector<uint32_t>{0}));
    h.ring.driver->enable_interrupts();  // wants a call at the next used entry
    ASSERT_TRUE(h.deliver(60, 64));
    const bool called = h.queue.flush();
    EXPECT_EQ(h.queue.call_deadline(), (split ? 5000u + NetRxQueue::kMaxCallDeferNs : 0u));
    // The ring stops: no later round would make a deferred call.
    EXPECT_EQ(h.queue.finish(), split && !called);
    EXPECT_EQ(h.queue.call_deadline(), 0u);
}

}  // namespace
}  // namespace vnet::virtio
