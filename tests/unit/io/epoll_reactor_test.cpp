#include "io/epoll_reactor.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "io/eventfd.hpp"

namespace vnet::io {
namespace {

using namespace std::chrono_literals;

TEST(EpollReactor, runs_the_callback_when_the_fd_is_readable) {
    EpollReactor reactor;
    UniqueFd e = make_eventfd();
    int calls = 0;
    reactor.watch(e.get(), EPOLLIN, [&](uint32_t events) {
        EXPECT_NE(events & EPOLLIN, 0u);
        drain_eventfd(e.get());
        ++calls;
    });
    EXPECT_EQ(reactor.run_once(0ms), 0);
    signal_eventfd(e.get());
    EXPECT_EQ(reactor.run_once(100ms), 1);
    EXPECT_EQ(calls, 1);
}

TEST(EpollReactor, callback_may_unwatch_its_own_fd) {
    EpollReactor reactor;
    UniqueFd e = make_eventfd();
    int calls = 0;
    reactor.watch(e.get(), EPOLLIN, [&](uint32_t) {
        ++calls;
        reactor.unwatch(e.get());
    });
    signal_eventfd(e.get());
    reactor.run_once(100ms);
    reactor.run_once(10ms);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(reactor.watched_count(), 0u);
}

TEST(EpollReactor, fd_unwatched_by_an_earlier_callback_in_the_same_batch_is_not_called) {
    EpollReactor reactor;
    UniqueFd a = make_eventfd();
    UniqueFd b = make_eventfd();
    int calls = 0;
    // Whichever runs first unwatches the other: only one may run.
    reactor.watch(a.get(), EPOLLIN, [&](uint32_t) {
        ++calls;
        reactor.unwatch(b.get());
    });
    reactor.watch(b.get(), EPOLLIN, [&](uint32_t) {
        ++calls;
        reactor.unwatch(a.get());
    });
    signal_eventfd(a.get());
    signal_eventfd(b.get());
    reactor.run_once(100ms);
    EXPECT_EQ(calls, 1);
}

TEST(EpollReactor, replaced_registration_on_a_reused_fd_number_gets_no_stale_event) {
    EpollReactor reactor;
    UniqueFd a = make_eventfd();
    UniqueFd b = make_eventfd();
    int stale = 0;
    int fresh = 0;
    reactor.watch(a.get(), EPOLLIN, [&](uint32_t) {
        // Unwatch b and watch it again with a new callback in the same batch.
        reactor.unwatch(b.get());
        reactor.watch(b.get(), EPOLLIN, [&](uint32_t) { ++fresh; });
    });
    reactor.watch(b.get(), EPOLLIN, [&](uint32_t) { ++stale; });
    signal_eventfd(a.get());
    signal_eventfd(b.get());
    reactor.run_once(100ms);
    EXPECT_LE(stale + fresh, 1);
}

TEST(EpollReactor, modify_switches_the_events_watched) {
    EpollReactor reactor;
    UniqueFd e = make_eventfd();
    int calls = 0;
    reactor.watch(e.get(), 0, [&](uint32_t events) {
        EXPECT_NE(events & EPOLLOUT, 0u);
        ++calls;
    });
    reactor.run_once(0ms);
    EXPECT_EQ(calls, 0);
    reactor.modify(e.get(), EPOLLOUT);  // an eventfd is always writable
    reactor.run_once(100ms);
    EXPECT_EQ(calls, 1);
}

TEST(EpollReactor, timers_fire_in_deadline_order) {
    EpollReactor reactor;
    std::vector<int> order;
    reactor.schedule(20ms, [&] { order.push_back(2); });
    reactor.schedule(5ms, [&] { order.push_back(1); });
    while (order.size() < 2) {
        reactor.run_once(1000ms);
    }
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    EXPECT_EQ(reactor.timer_count(), 0u);
}

TEST(EpollReactor, cancelled_timer_never_fires) {
    EpollReactor reactor;
    bool fired = false;
    auto id = reactor.schedule(1ms, [&] { fired = true; });
    reactor.cancel(id);
    std::this_thread::sleep_for(5ms);
    reactor.run_once(10ms);
    EXPECT_FALSE(fired);
}

TEST(EpollReactor, zero_delay_timer_scheduled_by_a_timer_runs_on_the_next_turn) {
    EpollReactor reactor;
    int runs = 0;
    std::function<void()> again = [&] {
        ++runs;
        reactor.schedule(0ms, again);
    };
    reactor.schedule(0ms, again);
    reactor.run_once(0ms);
    EXPECT_EQ(runs, 1);
    reactor.run_once(0ms);
    EXPECT_EQ(runs, 2);
}

TEST(EpollReactor, stop_from_another_thread_ends_run) {
    EpollReactor reactor;
    std::thread stopper([&] {
        std::this_thread::sleep_for(20ms);
        reactor.stop();
    });
    reactor.run();  // would block for a minute without the wakeup
    stopper.join();
}

TEST(EpollReactor, timer_wakes_run_once_before_its_timeout) {
    EpollReactor reactor;
    bool fired = false;
    reactor.schedule(10ms, [&] { fired = true; });
    const auto start = std::chrono::steady_clock::now();
    reactor.run_once(5000ms);
    EXPECT_TRUE(fired);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2000ms);
}

}  // namespace
}  // namespace vnet::io
