// Guest RX coalescing (rx_frames / rx_usecs) on a VhostUserPort: how many
// used-index publishes and calls a guest sees for the frames delivered to
// it. The test is the owning thread and runs the path's turns itself; the
// worker's side (deadlines, sleeping) is in tests/unit/dataplane.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "dataplane/forward_path.hpp"
#include "unit/ports/vhost_user/guest_rx_harness.hpp"

namespace vnet::ports {
namespace {

using test::GuestRxHarness;
using test::WakeableFillSource;

uint64_t steady_now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

class VhostUserPortRxCoalescing : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(guest.port.queue_ready(0));
        guest.post_rx_buffers(GuestRxHarness::kRingSize);
    }
    dataplane::TurnResult turn_with_frames(size_t n) {
        source.queue_frames(n);
        return path.run_turn(0);
    }

    WakeableFillSource source;
    GuestRxHarness guest;
    dataplane::ForwardPath path{source, 0, guest.port, 0, ports::QueuePairOptions{}};
    packet::QueueCounters& counters = guest.port.tx_counters(0);  // packets into the port
};

TEST_F(VhostUserPortRxCoalescing, rx_frames_0_publishes_and_notifies_once_per_burst) {
    turn_with_frames(5);
    EXPECT_EQ(guest.used_idx(), 5);
    EXPECT_EQ(guest.notifies(), 1u);
    turn_with_frames(3);
    EXPECT_EQ(guest.used_idx(), 8);
    EXPECT_EQ(guest.notifies(), 2u);
    EXPECT_EQ(guest.port.rx_held_deadline(0), 0u);
    EXPECT_EQ(counters.packets.get(), 8u);
    EXPECT_EQ(counters.bursts.get(), 2u);
    EXPECT_EQ(counters.publishes_coalesced.get(), 0u);
}

TEST_F(VhostUserPortRxCoalescing, rx_frames_8_publishes_at_8_and_16_and_holds_the_rest) {
    guest.port.set_rx_coalescing(0, 8, 1'000'000, false);  // 1 s: the clock plays no part here
    for (uint16_t frame = 1; frame <= 20; ++frame) {
        turn_with_frames(1);
        const auto published = static_cast<uint16_t>(frame / 8 * 8);
        ASSERT_EQ(guest.used_idx(), published) << "after frame " << frame;
        ASSERT_EQ(guest.notifies(), frame / 8u) << "after frame " << frame;
    }
    // Frames 17..20 wait for their deadline, which the worker enforces.
    const uint64_t deadline = guest.port.rx_held_deadline(0);
    EXPECT_GT(deadline, steady_now_ns());
    EXPECT_LE(deadline, steady_now_ns() + 1'000'000'000);
    guest.port.publish_held_rx(0);
    EXPECT_EQ(guest.used_idx(), 20);
    EXPECT_EQ(guest.notifies(), 3u);
    EXPECT_EQ(guest.port.rx_held_deadline(0), 0u);
    EXPECT_EQ(counters.packets.get(), 20u);
    EXPECT_EQ(counters.bursts.get(), 3u);                // one per publish: 8, 8, 4
    EXPECT_EQ(counters.publishes_coalesced.get(), 18u);  // 20 bursts, 2 published on their own
}

TEST_F(VhostUserPortRxCoalescing, a_burst_reaching_rx_frames_is_published_whole) {
    guest.port.set_rx_coalescing(0, 8, 1'000'000, false);
    turn_with_frames(5);
    EXPECT_EQ(guest.used_idx(), 0);
    turn_with_frames(12);  // 17 pending: one publish, not one at 8 and a remainder
    EXPECT_EQ(guest.used_idx(), 17);
    EXPECT_EQ(guest.notifies(), 1u);
}

TEST_F(VhostUserPortRxCoalescing, rx_usecs_0_holds_only_until_the_end_of_the_round) {
    guest.port.set_rx_coalescing(0, 8, 0, false);
    turn_with_frames(3);
    EXPECT_EQ(guest.used_idx(), 0);
    // Already due: the worker publishes it at the end of this round.
    const uint64_t deadline = guest.port.rx_held_deadline(0);
    EXPECT_NE(deadline, 0u);
    EXPECT_LE(deadline, steady_now_ns());
}

TEST_F(VhostUserPortRxCoalescing, held_frames_are_published_when_the_guest_runs_out_of_buffers) {
    GuestRxHarness small;
    small.post_rx_buffers(5);
    WakeableFillSource tap;
    dataplane::ForwardPath to_small(tap, 0, small.port, 0, ports::QueuePairOptions{});
    small.port.set_rx_coalescing(0, 8, 1'000'000, false);
    tap.queue_frames(10);
    dataplane::TurnResult turn = to_small.run_turn(0);
    EXPECT_EQ(turn.packets, 5u);
    EXPECT_EQ(turn.wait, dataplane::PathWait::destination);
    // Held, the guest would never see a used entry and never refill.
    EXPECT_EQ(small.used_idx(), 5);
    EXPECT_EQ(small.notifies(), 1u);
    EXPECT_EQ(small.port.rx_held_deadline(0), 0u);

    small.post_rx_buffers(3);
    to_small.run_turn(0);
    EXPECT_EQ(small.used_idx(), 8);
    EXPECT_EQ(small.notifies(), 2u);
}

TEST_F(VhostUserPortRxCoalescing, push_bursts_are_held_until_the_ring_is_emptied) {
    GuestRxHarness small;
    small.post_rx_buffers(6);
    dataplane::testing::FakePushSource vm;  // another VM's TX ring
    dataplane::ForwardPath to_small(vm, 0, small.port, 0, ports::QueuePairOptions{});
    small.port.set_rx_coalescing(0, 8, 1'000'000, false);
    // The fake's bytes are its packet number; a VM sink checks the
    // virtio-net header against the frame, so give them a plain one.
    auto queue_plain_packets = [&vm](size_t n) {
        vm.queue_packets(n, 72);
        for (size_t i = vm.packets.size() - n; i < vm.packets.size(); ++i) {
            std::fill_n(vm.packets[i].bytes.begin(), sizeof(virtio::NetHeader), uint8_t{0});
        }
    };
    queue_plain_packets(2);
    to_small.run_turn(0);
    EXPECT_EQ(small.used_idx(), 0);
    // Exactly the last posted buffers: nothing failed, but nothing is left.
    queue_plain_packets(4);
    to_small.run_turn(0);
    EXPECT_EQ(small.used_idx(), 6);
    EXPECT_EQ(small.notifies(), 1u);
    EXPECT_EQ(vm.completed.size(), 6u);
}

TEST_F(VhostUserPortRxCoalescing, a_stopped_ring_publishes_held_frames_and_keeps_its_setting) {
    guest.port.set_rx_coalescing(0, 8, 1'000'000, false);
    turn_with_frames(3);
    ASSERT_EQ(guest.used_idx(), 0);
    guest.stop_rx_ring();  // GET_VRING_BASE
    EXPECT_FALSE(guest.port.queue_ready(0));
    EXPECT_EQ(guest.used_idx(), 3);
    EXPECT_EQ(guest.notifies(), 1u);
    EXPECT_EQ(counters.packets.get(), 3u);
    EXPECT_EQ(counters.total_drops(), 0u);

    // The front end restarts the ring where the guest's used index is.
    guest.start_ring(0, 3);
    ASSERT_TRUE(guest.port.queue_ready(0));
    turn_with_frames(2);
    EXPECT_EQ(guest.used_idx(), 3) << "still coalescing after the restart";
    turn_with_frames(6);
    EXPECT_EQ(guest.used_idx(), 11);
    EXPECT_EQ(guest.notifies(), 2u);
    EXPECT_EQ(counters.packets.get(), 11u);
    EXPECT_EQ(counters.total_drops(), 0u);
}

TEST_F(VhostUserPortRxCoalescing, held_frames_of_a_guest_whose_memory_vanished_count_as_drops) {
    guest.port.set_rx_coalescing(0, 8, 1'000'000, false);
    turn_with_frames(3);
    auto address = reinterpret_cast<uintptr_t>(guest.device->memory()->regions()[0].host_addr);
    guest.port.on_guest_fault(0, address);  // what a SIGBUS on its memory leads to
    guest.stop_rx_ring();
    EXPECT_EQ(counters.drops[static_cast<size_t>(packet::DropReason::no_destination)].get(), 3u);
    EXPECT_EQ(counters.packets.get(), 0u);
}

TEST_F(VhostUserPortRxCoalescing, turning_coalescing_off_publishes_what_was_held) {
    guest.port.set_rx_coalescing(0, 8, 1'000'000, false);
    turn_with_frames(3);
    ASSERT_EQ(guest.used_idx(), 0);
    guest.port.set_rx_coalescing(0, 0, 0, false);
    EXPECT_EQ(guest.used_idx(), 3);
    turn_with_frames(1);
    EXPECT_EQ(guest.used_idx(), 4);
    EXPECT_EQ(guest.notifies(), 2u);
}

}  // namespace
}  // namespace vnet::ports
