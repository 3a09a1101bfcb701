// The worker's busy and idle time (metrics): rounds that moved packets
// count as busy, empty rounds and sleeps as idle, and the two together
// never exceed the time the thread ran.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "dataplane/forward_path.hpp"
#include "dataplane/worker.hpp"
#include "unit/dataplane/fake_ports.hpp"

namespace vnet::dataplane {
namespace {

using namespace std::chrono_literals;

uint64_t ns_since(std::chrono::steady_clock::time_point t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t)
            .count());
}

// Until the worker has slept `n` more times (event mode, nothing to do).
void wait_sleeps(const Worker& worker, uint64_t n) {
    const uint64_t target = worker.sleeps() + n;
    for (auto until = std::chrono::steady_clock::now() + 5s;
         worker.sleeps() < target && std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(1ms);
    }
    ASSERT_GE(worker.sleeps(), target);
}

// An event-mode worker with one path, fake source to fake sink.
class WorkerTime : public ::testing::Test {
protected:
    void SetUp() override {
        worker.add_engine(
            std::make_unique<ForwardPath>(source, 0, sink, 0, ports::QueuePairOptions{}));
    }
    void TearDown() override { worker.stop(); }

    testing::FakePushSource source;
    testing::FakeSink sink;
    Worker worker{WorkerOptions{}};
};

TEST_F(WorkerTime, a_worker_with_nothing_to_do_is_only_idle) {
    const auto started = std::chrono::steady_clock::now();
    worker.start();
    wait_sleeps(worker, 2);
    worker.stop();
    EXPECT_EQ(worker.busy_ns(), 0u);
    EXPECT_GT(worker.idle_ns(), 0u);
    EXPECT_LE(worker.idle_ns(), ns_since(started));
}

TEST_F(WorkerTime, rounds_that_forward_count_as_busy_and_the_sleeps_after_them_as_idle) {
    const auto started = std::chrono::steady_clock::now();
    worker.start();
    wait_sleeps(worker, 1);
    const uint64_t idle_before = worker.idle_ns();
    worker.run_sync([&] { source.queue_packets(1000, 64); });
    size_t received = 0;
    for (auto until = std::chrono::steady_clock::now() + 5s;
         received < 1000 && std::chrono::steady_clock::now() < until;) {
        worker.run_sync([&] { received = sink.received.size(); });
    }
    ASSERT_EQ(received, 1000u);
    wait_sleeps(worker, 2);
    worker.stop();
    EXPECT_GT(worker.busy_ns(), 0u);
    EXPECT_GT(worker.idle_ns(), idle_before);
    EXPECT_LE(worker.busy_ns() + worker.idle_ns(), ns_since(started));
}

TEST_F(WorkerTime, a_restarted_worker_does_not_count_the_time_it_was_stopped) {
    worker.start();
    wait_sleeps(worker, 1);
    worker.stop();
    const uint64_t idle_stopped = worker.idle_ns();
    std::this_thread::sleep_for(300ms);
    const auto restarted = std::chrono::steady_clock::now();
    worker.start();
    wait_sleeps(worker, 1);
    worker.stop();
    EXPECT_LE(worker.idle_ns() - idle_stopped, ns_since(restarted));
}

}  // namespace
}  // namespace vnet::dataplane
