// VhostUserPort::ring_view (vnetctl show): the cursors the owner keeps, the
// guest's ring fields read from guest memory, and the kick and call counts,
// against a guest whose every index and call the test knows.
#include <gtest/gtest.h>

#include "dataplane/forward_path.hpp"
#include "unit/ports/vhost_user/guest_rx_harness.hpp"

namespace vnet::ports {
namespace {

using test::GuestRxHarness;
using test::WakeableFillSource;

TEST(VhostUserPortShow, an_rx_ring_shows_its_cursors_the_guests_indexes_and_every_call) {
    GuestRxHarness guest;
    WakeableFillSource source;
    dataplane::ForwardPath path{source, 0, guest.port, 0, ports::QueuePairOptions{}};
    guest.post_rx_buffers(10);
    source.queue_frames(3);
    path.run_turn(0);
    source.queue_frames(2);
    path.run_turn(0);

    const VhostUserPort::RingView v = guest.port.ring_view(0);
    ASSERT_TRUE(v.running);
    ASSERT_TRUE(v.state.has_value());
    EXPECT_STREQ(v.state->format, "split");
    EXPECT_EQ(v.state->cursor_encoding, nullptr);  // plain free-running indexes
    EXPECT_EQ(v.state->size, GuestRxHarness::kRingSize);
    EXPECT_EQ(v.state->guest.find("avail_idx"), 10);  // what the guest posted
    // What the port took: 5 filled, 5 kept lent in its window for the next
    // burst (given back only when the ring stops).
    EXPECT_EQ(v.state->last_avail_idx, 10);
    EXPECT_EQ(v.state->last_used_idx, 5);           // the worker's used index
    EXPECT_EQ(v.state->guest.find("used_idx"), 5);  // as the guest sees it: published
    EXPECT_EQ(guest.used_idx(), 5);
    EXPECT_FALSE(v.state->guest.find("used_event").has_value());  // no EVENT_IDX negotiated
    EXPECT_EQ(v.packets, 5u);
    EXPECT_EQ(v.drops, 0u);
    // No EVENT_IDX: a call per publish, and each one counted.
    EXPECT_EQ(guest.notifies(), 2u);
    EXPECT_EQ(v.calls, 2u);
    EXPECT_EQ(guest.port.tx_counters(0).calls.get(), 2u);
    EXPECT_TRUE(v.call_fd);
    EXPECT_TRUE(v.kick_fd);
    EXPECT_EQ(v.kicks, 0u);  // only a worker that sleeps on the ring reads kicks
}

TEST(VhostUserPortShow, the_tx_ring_counts_its_own_calls_and_names_its_kick_counter) {
    GuestRxHarness guest;
    const WaitSpec rx_ring = guest.port.transmit_wait(0);
    const WaitSpec tx_ring = guest.port.receive_wait(0);
    EXPECT_EQ(rx_ring.kicks, &guest.port.tx_counters(0).kicks);  // ring 0, into the guest
    EXPECT_EQ(tx_ring.kicks, &guest.port.rx_counters(0).kicks);  // ring 1, out of the guest
    EXPECT_TRUE(tx_ring.eventfd);

    const VhostUserPort::RingView v = guest.port.ring_view(1);
    ASSERT_TRUE(v.state.has_value());
    EXPECT_EQ(v.state->guest.find("avail_idx"), 0);
    EXPECT_EQ(v.state->last_avail_idx, 0);
    EXPECT_EQ(v.calls, 0u);
}

TEST(VhostUserPortShow, a_ring_beyond_the_ports_queue_pairs_or_stopped_shows_no_state) {
    GuestRxHarness guest;
    EXPECT_FALSE(guest.port.ring_view(2).running);
    EXPECT_FALSE(guest.port.ring_view(2).state.has_value());
    guest.stop_rx_ring();
    const VhostUserPort::RingView v = guest.port.ring_view(0);
    EXPECT_FALSE(v.running);
    EXPECT_FALSE(v.state.has_value());
}

}  // namespace
}  // namespace vnet::ports
