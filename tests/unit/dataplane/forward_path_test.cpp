#include "dataplane/forward_path.hpp"

#include <gtest/gtest.h>

#include "ports/null/null_port.hpp"
#include "unit/dataplane/fake_ports.hpp"

namespace vnet::dataplane {
namespace {

using testing::FakeFillSource;
using testing::FakePushSource;
using testing::FakeSink;

TEST(ForwardPath, pushes_packets_in_bursts_of_tx_batch) {
    FakePushSource src;
    FakeSink dst;
    src.queue_packets(100, 60);
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 32});
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 100u);
    EXPECT_EQ(turn.bytes, 6000u);
    EXPECT_EQ(turn.wait, PathWait::source);
    EXPECT_EQ(dst.burst_sizes, (std::vector<uint16_t>{32, 32, 32, 4}));
    EXPECT_EQ(src.completed.size(), 100u);
}

TEST(ForwardPath, stops_a_turn_at_the_packet_weight) {
    FakePushSource src;
    FakeSink dst;
    src.queue_packets(1000, 60);
    ForwardPath path(src, 0, dst, 0,
                     ports::QueuePairOptions{.tx_batch = 64, .weight_packets = 256});
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 256u);
    EXPECT_EQ(turn.wait, PathWait::none);
}

TEST(ForwardPath, stops_a_turn_at_the_byte_weight) {
    FakePushSource src;
    FakeSink dst;
    src.queue_packets(1000, 1500);
    ForwardPath path(
        src, 0, dst, 0,
        ports::QueuePairOptions{.tx_batch = 1, .weight_packets = 256, .weight_bytes = 15000});
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 10u);
    EXPECT_EQ(turn.wait, PathWait::none);
}

TEST(ForwardPath, keeps_packets_the_destination_refused_and_sends_them_first_next_turn) {
    FakePushSource src;
    FakeSink dst;
    src.queue_packets(10, 60);
    dst.room = 3;
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 8});
    TurnResult first = path.run_turn(0);
    EXPECT_EQ(first.packets, 3u);
    EXPECT_EQ(first.wait, PathWait::destination);
    EXPECT_EQ(path.wait_spec(first.wait).fd, 42);
    EXPECT_EQ(src.completed, (std::vector<uint32_t>{0, 1, 2}));

    dst.room = SIZE_MAX;
    TurnResult second = path.run_turn(0);
    EXPECT_EQ(second.packets, 7u);
    ASSERT_EQ(dst.received.size(), 10u);
    for (size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(dst.received[i][0], i) << "packet " << i << " out of order";
    }
    EXPECT_EQ(src.completed.size(), 10u);
}

TEST(ForwardPath, does_nothing_while_an_end_is_not_ready) {
    FakePushSource src;
    FakeSink dst;
    src.queue_packets(5, 60);
    src.ready = false;
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{});
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 0u);
    EXPECT_EQ(turn.wait, PathWait::not_ready);
    EXPECT_EQ(src.bursts, 0);
}

TEST(ForwardPath, fills_destination_buffers_from_a_reading_source) {
    FakeFillSource src;
    ports::NullPort dst("null");
    for (int i = 0; i < 70; ++i) {
        src.frames.push_back(std::vector<uint8_t>(100, 1));
    }
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 64});
    EXPECT_EQ(path.style(), ForwardPath::Style::fill);
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 70u);
    EXPECT_EQ(turn.wait, PathWait::source);
    EXPECT_EQ(path.wait_spec(turn.wait).fd, 7);
    EXPECT_EQ(dst.tx_counters(0).packets.get(), 70u);
    EXPECT_EQ(dst.tx_counters(0).bursts.get(), 2u);  // one publish per 64, then the rest
}

// Frames one at a time (a ping-pong): once a turn found one frame and the
// read after it nothing, the next frame goes to the destination at once,
// without that read. A frame queued behind one so handed over turns
// batching back on.
TEST(ForwardPath, a_lone_frame_is_handed_over_without_the_read_after_it) {
    FakeFillSource src;
    ports::NullPort dst("null");
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 64});
    const std::vector<uint8_t> frame(100, 1);
    auto turn_of = [&](size_t queued) {
        for (size_t i = 0; i < queued; ++i) {
            src.frames.push_back(frame);
        }
        src.reads = 0;
        return path.run_turn(0);
    };
    TurnResult turn = turn_of(1);
    EXPECT_EQ(turn.packets, 1u);
    EXPECT_EQ(src.reads, 2);  // the frame, and the read that found nothing
    turn = turn_of(1);
    EXPECT_EQ(turn.packets, 1u);
    EXPECT_EQ(turn.wait, PathWait::source);
    EXPECT_EQ(src.reads, 1);
    EXPECT_EQ(dst.tx_counters(0).packets.get(), 2u);
    turn = turn_of(0);  // nothing came: still one at a time
    EXPECT_EQ(turn.packets, 0u);
    turn = turn_of(1);
    EXPECT_EQ(turn.packets, 1u);
    EXPECT_EQ(src.reads, 1);

    turn = turn_of(0);
    EXPECT_EQ(src.reads, 1);

    // Five at once: the first goes alone, the turn after it finds the next
    // at its first read and takes all four.
    turn = turn_of(5);
    EXPECT_EQ(turn.packets, 1u);
    EXPECT_EQ(src.reads, 1);
    turn = turn_of(0);
    EXPECT_EQ(turn.packets, 4u);
    EXPECT_EQ(src.reads, 5);
    turn = turn_of(1);  // batching: the read after it again
    EXPECT_EQ(turn.packets, 1u);
    EXPECT_EQ(src.reads, 2);
    EXPECT_EQ(dst.tx_counters(0).packets.get(), 9u);
}

TEST(ForwardPath, clamps_tx_batch_to_the_burst_capacity) {
    FakePushSource src;
    FakeSink dst;
    ForwardPath zero(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 0});
    ForwardPath huge(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 1000});
    EXPECT_EQ(zero.options().tx_batch, 0);  // 0 is the per-packet mode, kept as asked
    EXPECT_EQ(huge.options().tx_batch, packet::kMaxBurstPackets);
}

TEST(ForwardPath, per_packet_mode_takes_writes_and_completes_one_packet_at_a_time) {
    FakePushSource src;
    FakeSink dst;
    src.queue_packets(5, 60);
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 0});
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 5u);
    EXPECT_EQ(dst.burst_sizes, (std::vector<uint16_t>{1, 1, 1, 1, 1}));
    EXPECT_EQ(src.complete_calls, 5);
}

// A source that hands out at most `per_call` packets per receive_burst, like
// a ring the guest is still filling: each call re-reads the avail index.
class TricklingSource : public FakePushSource {
public:
    uint16_t receive_burst(uint16_t q, packet::PacketBurst& burst, uint16_t max) override {
        return FakePushSource::receive_burst(q, burst, std::min(max, per_call));
    }
    uint16_t per_call = 4;
};

TEST(ForwardPath, peek_holds_the_batch_while_the_source_has_more) {
    TricklingSource src;
    FakeSink dst;
    src.queue_packets(40, 60);
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 16});
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 40u);
    EXPECT_EQ(dst.burst_sizes, (std::vector<uint16_t>{16, 16, 8}));
    EXPECT_EQ(src.complete_calls, 3);  // one used-ring publish per batch
}

TEST(ForwardPath, without_peek_each_packet_is_submitted_on_its_own_but_completed_per_batch) {
    TricklingSource src;
    FakeSink dst;
    src.queue_packets(8, 60);
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 16, .tx_peek = false});
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 8u);
    EXPECT_EQ(dst.burst_sizes, std::vector<uint16_t>(8, 1));
    EXPECT_EQ(src.complete_calls, 2);  // the source's two bursts of 4
    ASSERT_EQ(dst.received.size(), 8u);
    for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(dst.received[i][0], i);  // in order
    }
}

TEST(ForwardPath, without_peek_a_full_destination_keeps_the_rest_in_order) {
    FakePushSource src;
    FakeSink dst;
    src.queue_packets(6, 60);
    dst.room = 2;
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 8, .tx_peek = false});
    TurnResult first = path.run_turn(0);
    EXPECT_EQ(first.packets, 2u);
    EXPECT_EQ(first.wait, PathWait::destination);
    dst.room = SIZE_MAX;
    TurnResult second = path.run_turn(0);
    EXPECT_EQ(second.packets, 4u);
    EXPECT_EQ(src.completed, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
}

// The source's bucket (1 kbit: one 64-byte frame of 512 bits, not two):
// of a burst of 10 taken at once, the newest passes and the 9 before it are
// dropped, completed to the source first and counted as `policed` on its
// rx counters. Bits, not time: the bucket is full when the burst comes.
TEST(ForwardPath, policing_drops_the_oldest_of_a_burst_over_the_bucket_and_counts_them) {
    FakePushSource src;
    FakeSink dst;
    IngressPolicer policer;
    policer.configure(1, 1);
    src.queue_packets(10, 64 + 12);
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 32});
    path.set_ingress_policer(&policer);
    TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 10u);  // handled: 9 dropped, 1 sent
    EXPECT_EQ(turn.bytes, 76u);
    EXPECT_EQ(turn.wait, PathWait::source);
    ASSERT_EQ(dst.received.size(), 1u);
    EXPECT_EQ(dst.received[0][0], 9);  // the newest packet's bytes
    EXPECT_EQ(src.completed, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    EXPECT_EQ(src.rx.drops[static_cast<size_t>(packet::DropReason::policed)].get(), 9u);
    EXPECT_EQ(src.rx.total_drops(), 9u);
}

TEST(ForwardPath, a_path_with_policing_off_sends_everything) {
    FakePushSource src;
    FakeSink dst;
    IngressPolicer policer;  // rate 0
    src.queue_packets(10, 76);
    ForwardPath path(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 32});
    path.set_ingress_policer(&policer);
    EXPECT_EQ(path.run_turn(0).packets, 10u);
    EXPECT_EQ(dst.received.size(), 10u);
    EXPECT_EQ(src.rx.total_drops(), 0u);
}

}  // namespace
}  // namespace vnet::dataplane
