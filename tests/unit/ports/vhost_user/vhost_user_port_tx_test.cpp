// A VM's TX ring as a push-style source: what the port does with chains it
// cannot hand to a destination, and what it drops when the front end turns
// the ring off under a destination that still holds packets. The test is
// the owning thread.
#include <gtest/gtest.h>

#include "dataplane/forward_path.hpp"
#include "unit/dataplane/fake_ports.hpp"
#include "unit/ports/vhost_user/guest_rx_harness.hpp"

namespace vnet::ports {
namespace {

using test::GuestRxHarness;

auto inline_owner() {
    return [](uint16_t, const std::function<void()>& work) { work(); };
}

uint64_t drops(packet::QueueCounters& c, packet::DropReason r) {
    return c.drops[static_cast<size_t>(r)].get();
}

TEST(VhostUserPortTx, a_chain_longer_than_one_write_takes_is_dropped_and_the_ring_goes_on) {
    GuestRxHarness guest(inline_owner(), GuestRxHarness::kMaxTxRingSize);
    ASSERT_TRUE(guest.port.queue_ready(0));
    guest.post_tx_chain(packet::kMaxBurstIovecs + 1, 16);  // UIO_MAXIOV + 1 segments
    guest.post_tx_chain(2, 64);

    packet::PacketBurst burst;
    ASSERT_EQ(guest.port.receive_burst(0, burst, packet::kMaxBurstPackets), 1);
    EXPECT_EQ(burst.packets[0].iov_count, 2);
    EXPECT_EQ(burst.packets[0].len, 128u);
    packet::QueueCounters& out = guest.port.rx_counters(0);
    EXPECT_EQ(drops(out, packet::DropReason::too_many_segments), 1u);
    EXPECT_EQ(drops(out, packet::DropReason::bad_descriptor_chain), 0u);

    guest.port.complete_burst(0, burst, 1);
    EXPECT_EQ(guest.used_idx(1), 2);
    EXPECT_EQ(guest.used_len(1, 0), 0u);  // completed unsent
    EXPECT_TRUE(guest.port.queue_ready(0));
    EXPECT_EQ(out.packets.get(), 1u);
}

TEST(VhostUserPortTx, packets_held_when_the_front_end_disables_the_ring_drop_as_queue_disabled) {
    GuestRxHarness guest(inline_owner(), GuestRxHarness::kRingSize, /*ring_enable=*/true);
    ASSERT_TRUE(guest.port.queue_ready(0));
    for (int i = 0; i < 3; ++i) {
        guest.post_tx_chain(1, 80);
    }
    packet::PacketBurst burst;
    ASSERT_EQ(guest.port.receive_burst(0, burst, packet::kMaxBurstPackets), 3);

    guest.set_ring_enabled(1, false);  // a destination still holds all three

    EXPECT_FALSE(guest.port.queue_ready(0));
    packet::QueueCounters& out = guest.port.rx_counters(0);
    EXPECT_EQ(drops(out, packet::DropReason::queue_disabled), 3u);
    EXPECT_EQ(drops(out, packet::DropReason::no_destination), 0u);
    EXPECT_EQ(guest.used_idx(1), 3);  // given back to the guest as completed
}

TEST(VhostUserPortTx, packets_held_when_the_front_end_goes_away_drop_as_no_destination) {
    GuestRxHarness guest(inline_owner());
    guest.post_tx_chain(1, 80);
    packet::PacketBurst burst;
    ASSERT_EQ(guest.port.receive_burst(0, burst, packet::kMaxBurstPackets), 1);

    guest.device.reset();  // the connection closed

    packet::QueueCounters& out = guest.port.rx_counters(0);
    EXPECT_EQ(drops(out, packet::DropReason::no_destination), 1u);
    EXPECT_EQ(drops(out, packet::DropReason::queue_disabled), 0u);
}

TEST(VhostUserPortTx, a_burst_says_which_header_its_packets_carry) {
    GuestRxHarness guest(inline_owner());
    guest.post_tx_chain(1, 80);
    packet::PacketBurst burst;
    burst.header_size = 0;
    ASSERT_EQ(guest.port.receive_burst(0, burst, packet::kMaxBurstPackets), 1);
    EXPECT_EQ(burst.header_size, 12);  // VERSION_1
}

// vhost-user.rst "Starting and stopping rings": each ring starts on its own
// kick. A front end that sets up, enables and kicks only the TX ring of a
// pair (QEMU always sets up both) has its frames taken all the same.
TEST(VhostUserPortTx, a_tx_ring_kicked_alone_is_served_while_its_rx_ring_never_started) {
    GuestRxHarness guest(inline_owner(), GuestRxHarness::kRingSize, /*ring_enable=*/true,
                         /*start_rx_ring=*/false);
    for (int i = 0; i < 3; ++i) {
        guest.post_tx_chain(1, 80);
    }
    dataplane::testing::FakeSink sink;
    dataplane::ForwardPath path(guest.port, 0, sink, 0, ports::QueuePairOptions{});
    const dataplane::TurnResult turn = path.run_turn(0);
    EXPECT_EQ(turn.packets, 3u);
    EXPECT_EQ(sink.received.size(), 3u);
    EXPECT_EQ(guest.port.rx_counters(0).packets.get(), 3u);
    EXPECT_EQ(guest.used_idx(1), 3);

    // The other way has no guest buffers to land in until the RX ring runs.
    dataplane::testing::FakePushSource other;
    dataplane::ForwardPath into_guest(other, 0, guest.port, 0, ports::QueuePairOptions{});
    EXPECT_EQ(into_guest.run_turn(0).wait, dataplane::PathWait::not_ready);
}

}  // namespace
}  // namespace vnet::ports
