// The worker's side of guest RX coalescing: frames a guest RX ring holds
// for rx_frames / rx_usecs are published at their deadline with no more
// traffic, never stay held across a sleep without one, and go out when the
// path is removed or the worker stops.
//
// The worker runs on its own thread; the test reaches the fill source only
// through run_sync, which runs between rounds, so "the source is empty"
// means the round that delivered the frames has ended.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "dataplane/forward_path.hpp"
#include "dataplane/worker.hpp"
#include "unit/ports/vhost_user/guest_rx_harness.hpp"

namespace vnet::dataplane {
namespace {

using namespace std::chrono_literals;
using ports::test::GuestRxHarness;
using ports::test::WakeableFillSource;

class WorkerRxCoalescing : public ::testing::Test {
protected:
    void TearDown() override {
        if (worker) {
            worker->stop();  // before the ports its paths point at go away
        }
    }

    void start(WorkerMode mode, uint32_t rx_frames, uint32_t rx_usecs) {
        WorkerOptions o;
        o.mode = mode;
        worker = std::make_unique<Worker>(o);
        guest = std::make_unique<GuestRxHarness>(
            [this](uint16_t, const std::function<void()>& work) { worker->run_sync(work); });
        ASSERT_TRUE(guest->port.queue_ready(0));
        guest->post_rx_buffers(GuestRxHarness::kRingSize);
        worker->start();
        worker->run_sync([&] {
            path = &worker->add_engine(std::make_unique<ForwardPath>(
                source, 0, guest->port, 0,
                ports::QueuePairOptions{.rx_frames = rx_frames, .rx_usecs = rx_usecs}));
        });
    }
    // Queues `n` frames and returns once a round has delivered them all.
    void deliver(size_t n) {
        worker->run_sync([&] { source.queue_frames(n); });
        source.wake();
        for (auto until = std::chrono::steady_clock::now() + 5s;
             std::chrono::steady_clock::now() < until;) {
            bool empty = false;
            worker->run_sync([&] { empty = source.frames.empty(); });
            if (empty) {
                return;
            }
            std::this_thread::sleep_for(100us);
        }
        FAIL() << "the worker did not take the frames";
    }
    // Waits for the used index to reach `idx`, then for the round that
    // published it to end (run_sync runs between rounds): the worker writes
    // the index before it signals the call, so the notification is only
    // certain to be counted then.
    bool wait_used(uint16_t idx, std::chrono::milliseconds limit = 5000ms) {
        bool reached = false;
        for (auto until = std::chrono::steady_clock::now() + limit;
             !reached && std::chrono::steady_clock::now() < until;) {
            reached = guest->used_idx() == idx;
            if (!reached) {
                std::this_thread::sleep_for(100us);
            }
        }
        reached = reached || guest->used_idx() == idx;
        worker->run_sync([] {});
        return reached;
    }
    packet::QueueCounters& counters() { return guest->port.tx_counters(0); }

    // Declared so that the worker outlives the port (whose rings it stops
    // when the device goes) and the source outlives both.
    WakeableFillSource source;
    std::unique_ptr<Worker> worker;
    std::unique_ptr<GuestRxHarness> guest;
    ForwardPath* path = nullptr;
};

TEST_F(WorkerRxCoalescing, publishes_at_8_and_16_and_the_rest_at_the_deadline_with_no_traffic) {
    constexpr auto kUsecs = 500ms;
    start(WorkerMode::event, 8, static_cast<uint32_t>(kUsecs / 1us));
    auto first_held = std::chrono::steady_clock::now();
    for (uint16_t frame = 1; frame <= 20; ++frame) {
        if (frame % 8 == 1) {
            first_held = std::chrono::steady_clock::now();
        }
        deliver(1);
        ASSERT_EQ(guest->used_idx(), frame / 8 * 8) << "after frame " << frame;
        ASSERT_EQ(guest->notifies(), frame / 8u) << "after frame " << frame;
    }
    const uint64_t sleeps_while_held = worker->sleeps();
    // No more traffic: the worker sleeps, and its timer brings it back.
    ASSERT_TRUE(wait_used(20));
    EXPECT_GE(std::chrono::steady_clock::now() - first_held, kUsecs) << "published early";
    EXPECT_GT(worker->sleeps(), sleeps_while_held);
    EXPECT_EQ(guest->notifies(), 3u);
    EXPECT_EQ(counters().packets.get(), 20u);
    EXPECT_EQ(counters().publishes_coalesced.get(), 18u);
}

TEST_F(WorkerRxCoalescing, with_rx_usecs_0_frames_are_published_before_the_worker_sleeps) {
    start(WorkerMode::event, 8, 0);
    deliver(3);
    // The round that delivered them has ended: nothing may be held now.
    EXPECT_EQ(guest->used_idx(), 3);
    EXPECT_EQ(guest->notifies(), 1u);
    EXPECT_EQ(guest->port.rx_held_deadline(0), 0u);
}

TEST_F(WorkerRxCoalescing, a_poll_mode_worker_publishes_at_the_deadline_too) {
    start(WorkerMode::poll, 8, 20'000);
    deliver(3);
    ASSERT_TRUE(wait_used(3));
    EXPECT_EQ(guest->notifies(), 1u);
}

TEST_F(WorkerRxCoalescing, an_adaptive_mode_worker_sleeps_once_traffic_stops) {
    start(WorkerMode::adaptive, 8, 20'000);
    deliver(3);
    ASSERT_TRUE(wait_used(3));  // the deadline's timer woke it, or it was still spinning
    // Within the spin ceiling (200 us) of the last frame it sleeps in epoll;
    // a poll-mode worker never would.
    for (auto until = std::chrono::steady_clock::now() + 5s;
         worker->sleeps() == 0 && std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_GT(worker->sleeps(), 0u);
    EXPECT_EQ(guest->notifies(), 1u);
}

TEST_F(WorkerRxCoalescing, removing_the_path_publishes_what_it_left_held) {
    start(WorkerMode::event, 8, 60'000'000);  // a minute: only the removal can publish
    deliver(3);
    ASSERT_EQ(guest->used_idx(), 0);
    worker->run_sync([&] { worker->remove_engine(path); });
    EXPECT_EQ(guest->used_idx(), 3);
    EXPECT_EQ(guest->notifies(), 1u);
}

TEST_F(WorkerRxCoalescing, stopping_the_worker_publishes_held_frames) {
    start(WorkerMode::event, 8, 60'000'000);
    deliver(3);
    ASSERT_EQ(guest->used_idx(), 0);
    worker->stop();
    EXPECT_EQ(guest->used_idx(), 3);
    EXPECT_EQ(guest->notifies(), 1u);
}

TEST_F(WorkerRxCoalescing, a_ring_stopped_while_frames_are_held_publishes_them) {
    start(WorkerMode::event, 8, 60'000'000);
    deliver(3);
    ASSERT_EQ(guest->used_idx(), 0);
    guest->stop_rx_ring();  // GET_VRING_BASE: the port stops the ring on the worker
    EXPECT_EQ(guest->used_idx(), 3);
    EXPECT_EQ(counters().packets.get(), 3u);
    EXPECT_EQ(counters().total_drops(), 0u);
}

}  // namespace
}  // namespace vnet::dataplane
