// NetTxQueue over both ring models: what a guest's TX ring hands out, what
// it gets back, and what a chain the guest got wrong costs.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "packet/packet_burst.hpp"
#include "unit/virtio/net/net_queue_harness.hpp"
#include "virtio/net/net_tx_queue.hpp"

namespace vnet::virtio {
namespace {

using packet::DropReason;
using packet::PacketBurst;
using test::ModelNames;
using test::RingModels;

template <typename Model>
class NetTxQueueTest : public ::testing::Test {
protected:
    using Harness = test::NetQueueHarness<Model, NetTxQueue>;
};
TYPED_TEST_SUITE(NetTxQueueTest, RingModels, ModelNames);

TYPED_TEST(NetTxQueueTest, hands_out_a_one_descriptor_chain_with_a_12_byte_header) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    h.ring.post(3, 1, /*readable=*/1);
    PacketBurst burst;
    const NetTxQueue::Received got = h.queue.receive_burst(burst, 64);
    ASSERT_EQ(got.taken, 1);
    EXPECT_FALSE(got.notify);
    ASSERT_EQ(burst.count, 1);
    EXPECT_EQ(burst.header_size, 12);
    EXPECT_EQ(burst.packets[0].len, h.ring.kSegmentBytes);
    ASSERT_EQ(burst.packets[0].iov_count, 1);
    EXPECT_EQ(burst.iovecs[0].iov_base, h.ring.buffer_host(3 * 4));

    EXPECT_TRUE(h.queue.complete_burst(burst, 1));  // no EVENT_IDX: every publish wants a call
    const auto done = h.ring.reclaim_all();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].cookie, 3u);
    EXPECT_EQ(done[0].len, 0u);  // copy semantics: nothing written
    EXPECT_EQ(h.counters.packets.get(), 1u);
    EXPECT_EQ(h.counters.bytes.get(), h.ring.kSegmentBytes - 12);  // frame bytes
}

TYPED_TEST(NetTxQueueTest, hands_out_multi_descriptor_chains_with_a_10_byte_header) {
    typename TestFixture::Harness h(16, false, test::legacy_config());
    h.ring.post(0, 2, /*readable=*/3);
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 2);
    EXPECT_EQ(burst.header_size, 10);
    for (uint16_t p = 0; p < 2; ++p) {
        ASSERT_EQ(burst.packets[p].iov_count, 3) << "packet " << p;
        EXPECT_EQ(burst.packets[p].len, 3 * h.ring.kSegmentBytes);
        const auto iov = burst.packet_iovecs(p);
        for (uint32_t i = 0; i < 3; ++i) {
            EXPECT_EQ(iov[i].iov_base, h.ring.buffer_host(p * 4 + i)) << "packet " << p;
        }
    }
    EXPECT_TRUE(h.queue.complete_burst(burst, 2));
    EXPECT_EQ(h.ring.reclaim_all().size(), 2u);
    EXPECT_EQ(h.counters.bytes.get(), 2 * (3 * h.ring.kSegmentBytes - 10));
    EXPECT_EQ(h.counters.bursts.get(), 1u);
}

TYPED_TEST(NetTxQueueTest, takes_no_more_than_max_and_leaves_the_rest_queued) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.ring.post(0, 5);
    PacketBurst burst;
    EXPECT_EQ(h.queue.receive_burst(burst, 3).taken, 3);
    h.queue.complete_burst(burst, 3);
    burst.clear();
    EXPECT_EQ(h.queue.receive_burst(burst, 64).taken, 2);
    EXPECT_EQ(burst.packets[0].iov_count, 1);
    EXPECT_EQ(burst.iovecs[0].iov_base, h.ring.buffer_host(3 * 4));
}

// A chain of more segments than one write takes (UIO_MAXIOV = the burst's
// iovec pool): legal for the guest, so it waits for an empty burst, and is
// then completed unsent and counted; the ring goes on.
TYPED_TEST(NetTxQueueTest, completes_a_chain_too_long_for_one_write_as_too_many_segments) {
    typename TestFixture::Harness h(2048, false, test::version_1_config());
    h.ring.add(1, 1);
    std::vector<frontend::BufferSegment> long_chain(packet::kMaxBurstIovecs + 1);
    for (uint32_t i = 0; i < long_chain.size(); ++i) {
        long_chain[i] = {h.ring.buffer_gpa(100 + i), 64, frontend::BufferAccess::device_reads};
    }
    ASSERT_TRUE(h.ring.driver->add_chain(long_chain, 2));
    h.ring.add(3, 1);
    h.ring.driver->publish();

    PacketBurst burst;
    // The burst already holds iovecs: the long chain stays in the ring.
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);
    EXPECT_EQ(h.drops(DropReason::too_many_segments), 0u);
    h.queue.complete_burst(burst, 1);
    burst.clear();
    // An empty burst cannot take it either: skipped, counted, completed.
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);
    EXPECT_EQ(h.drops(DropReason::too_many_segments), 1u);
    EXPECT_EQ(burst.iovecs[0].iov_base, h.ring.buffer_host(3 * 4));
    EXPECT_TRUE(h.queue.running());
    h.queue.complete_burst(burst, 1);
    std::vector<uint32_t> cookies;
    for (const frontend::Completion& c : h.ring.reclaim_all()) {
        cookies.push_back(c.cookie);
    }
    EXPECT_EQ(cookies, (std::vector<uint32_t>{1, 2, 3}));
}

TYPED_TEST(NetTxQueueTest, completes_a_chain_with_nothing_beyond_the_header_as_too_short) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    const frontend::BufferSegment header_only{h.ring.buffer_gpa(0), 12,
                                              frontend::BufferAccess::device_reads};
    ASSERT_TRUE(h.ring.driver->add_chain(std::span(&header_only, 1), 9));
    h.ring.driver->publish();
    PacketBurst burst;
    const NetTxQueue::Received got = h.queue.receive_burst(burst, 64);
    EXPECT_EQ(got.taken, 0);
    EXPECT_TRUE(got.notify);  // published at once: nothing else would complete it
    EXPECT_EQ(h.drops(DropReason::packet_too_short), 1u);
    const auto done = h.ring.reclaim_all();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].cookie, 9u);
}

// A burst is popped in one call: a chain completed unsent in the middle
// leaves no hole, the packets after it start where it started.
TYPED_TEST(NetTxQueueTest, packs_the_packets_after_a_too_short_chain_of_the_same_burst) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.ring.add(1, 2);
    const frontend::BufferSegment header_only{h.ring.buffer_gpa(8), 12,
                                              frontend::BufferAccess::device_reads};
    ASSERT_TRUE(h.ring.driver->add_chain(std::span(&header_only, 1), 2));
    h.ring.add(3, 3);
    h.ring.driver->publish();
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 2);
    EXPECT_EQ(h.drops(DropReason::packet_too_short), 1u);
    ASSERT_EQ(burst.packets[1].first_iov, 2);
    ASSERT_EQ(burst.packets[1].iov_count, 3);
    EXPECT_EQ(burst.iovecs_used, 5);
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(burst.packet_iovecs(1)[i].iov_base, h.ring.buffer_host(3 * 4 + i));
    }
    h.queue.complete_burst(burst, 2);
    std::vector<uint32_t> cookies;
    for (const frontend::Completion& c : h.ring.reclaim_all()) {
        cookies.push_back(c.cookie);
    }
    // In ring order: the dropped one waits for the chain taken before it.
    EXPECT_EQ(cookies, (std::vector<uint32_t>{1, 2, 3}));
}

// VIRTIO_F_IN_ORDER drivers (DPDK virtio-user's in-order paths) free
// buffers by position: a chain completed unsent must not overtake one a
// destination still holds, or the guest would reuse that one's buffer.
TYPED_TEST(NetTxQueueTest, completes_a_dropped_chain_only_after_the_held_ones_before_it) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.ring.add(1, 1);
    h.ring.driver->publish();
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);  // chain 1, held
    const frontend::BufferSegment header_only{h.ring.buffer_gpa(8), 12,
                                              frontend::BufferAccess::device_reads};
    ASSERT_TRUE(h.ring.driver->add_chain(std::span(&header_only, 1), 2));
    h.ring.add(3, 1);
    h.ring.driver->publish();
    const NetTxQueue::Received second = h.queue.receive_burst(burst, 64);
    EXPECT_EQ(second.taken, 1);  // chain 3; chain 2 is dropped behind chain 1
    EXPECT_FALSE(second.notify);
    EXPECT_EQ(h.drops(DropReason::packet_too_short), 1u);
    EXPECT_TRUE(h.ring.reclaim_all().empty());
    auto cookies = [&] {
        std::vector<uint32_t> out;
        for (const frontend::Completion& c : h.ring.reclaim_all()) {
            out.push_back(c.cookie);
        }
        return out;
    };
    h.queue.complete_burst(burst, 1);  // chain 1 went out: the dropped one follows it
    EXPECT_EQ(cookies(), (std::vector<uint32_t>{1, 2}));
    burst.pop_front(1);
    h.queue.complete_burst(burst, 1);
    EXPECT_EQ(cookies(), (std::vector<uint32_t>{3}));
}

TYPED_TEST(NetTxQueueTest, finish_counts_only_the_held_chains_as_dropped_and_keeps_ring_order) {
    typename TestFixture::Harness h(16, false, test::version_1_config());
    h.ring.add(1, 1);
    h.ring.driver->publish();
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);
    const frontend::BufferSegment header_only{h.ring.buffer_gpa(8), 12,
                                              frontend::BufferAccess::device_reads};
    ASSERT_TRUE(h.ring.driver->add_chain(std::span(&header_only, 1), 2));
    h.ring.driver->publish();
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 0);
    h.queue.finish(DropReason::no_destination);
    EXPECT_EQ(h.drops(DropReason::no_destination), 1u);
    EXPECT_EQ(h.drops(DropReason::packet_too_short), 1u);
    std::vector<uint32_t> cookies;
    for (const frontend::Completion& c : h.ring.reclaim_all()) {
        cookies.push_back(c.cookie);
    }
    EXPECT_EQ(cookies, (std::vector<uint32_t>{1, 2}));
}

// The room a chain completed unsent held is room for the next chain, as
// with one pop per chain: a chain that fits only with it is taken, not
// skipped as too long.
TYPED_TEST(NetTxQueueTest, gives_the_room_of_a_too_short_chain_to_the_next_one) {
    typename TestFixture::Harness h(2048, false, test::version_1_config());
    std::vector<frontend::BufferSegment> tiny(12);
    for (uint32_t i = 0; i < tiny.size(); ++i) {
        tiny[i] = {h.ring.buffer_gpa(i), 1, frontend::BufferAccess::device_reads};
    }
    ASSERT_TRUE(h.ring.driver->add_chain(tiny, 1));
    std::vector<frontend::BufferSegment> big(packet::kMaxBurstIovecs - 4);
    for (uint32_t i = 0; i < big.size(); ++i) {
        big[i] = {h.ring.buffer_gpa(100 + i), 64, frontend::BufferAccess::device_reads};
    }
    ASSERT_TRUE(h.ring.driver->add_chain(big, 2));
    h.ring.driver->publish();
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);
    EXPECT_EQ(h.drops(DropReason::packet_too_short), 1u);
    EXPECT_EQ(h.drops(DropReason::too_many_segments), 0u);
    EXPECT_EQ(burst.packets[0].iov_count, packet::kMaxBurstIovecs - 4);
    EXPECT_EQ(burst.iovecs[0].iov_base, h.ring.buffer_host(100));
}

TYPED_TEST(NetTxQueueTest, stops_with_a_fault_on_a_device_writable_buffer) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    h.ring.post(0, 1, /*readable=*/1, /*writable=*/1);
    PacketBurst burst;
    EXPECT_EQ(h.queue.receive_burst(burst, 64).taken, 0);
    EXPECT_FALSE(h.queue.running());
    const RingFault* fault = h.queue.take_fault();
    ASSERT_NE(fault, nullptr);
    EXPECT_STREQ(fault->what, "TX descriptor chain");
    EXPECT_STREQ(fault->detail, "device-writable buffer in a TX chain");
    EXPECT_EQ(h.queue.take_fault(), nullptr);  // reported once
    EXPECT_EQ(h.drops(DropReason::bad_descriptor_chain), 1u);
    h.ring.post(1, 1);
    EXPECT_EQ(h.queue.receive_burst(burst, 64).taken, 0);  // a stopped queue takes nothing
}

TYPED_TEST(NetTxQueueTest, turns_kicks_off_while_it_works_and_on_again_when_armed) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    h.ring.post(0, 1);
    EXPECT_TRUE(h.ring.driver->kick_needed());
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);
    h.ring.post(1, 1);
    EXPECT_FALSE(h.ring.driver->kick_needed());  // polling anyway: no kick wanted
    // Work arrived while kicks were off: not safe to sleep.
    EXPECT_FALSE(h.queue.arm_kicks());
    h.queue.complete_burst(burst, 1);
    burst.clear();
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);
    h.queue.complete_burst(burst, 1);
    EXPECT_TRUE(h.queue.arm_kicks());
    h.ring.post(2, 1);
    EXPECT_TRUE(h.ring.driver->kick_needed());
}

TYPED_TEST(NetTxQueueTest, wants_no_call_without_a_call_fd) {
    test::NetQueueHarness<TypeParam, NetTxQueue> h(8, false, test::version_1_config());
    h.queue.set_calls_wanted(false);
    h.ring.post(0, 1);
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 64).taken, 1);
    EXPECT_FALSE(h.queue.complete_burst(burst, 1));
    EXPECT_EQ(h.ring.reclaim_all().size(), 1u);  // published all the same
}

TYPED_TEST(NetTxQueueTest, completes_what_a_destination_held_as_dropped_at_finish) {
    typename TestFixture::Harness h(8, false, test::version_1_config());
    h.ring.post(0, 3);
    PacketBurst burst;
    ASSERT_EQ(h.queue.receive_burst(burst, 2).taken, 2);
    const uint16_t untaken = h.queue.finish(DropReason::queue_disabled);
    EXPECT_EQ(untaken, 1);
    EXPECT_EQ(h.drops(DropReason::queue_disabled), 2u);
    EXPECT_EQ(h.ring.reclaim_all().size(), 2u);
}

}  // namespace
}  // namespace vnet::virtio
