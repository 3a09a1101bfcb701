// Kicks are counted where the worker consumes them: the value it reads from
// a kick eventfd when it wakes on it is added to the ring's counter (the
// WaitSpec names it), so the count is what the guest signalled, per event.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "dataplane/forward_path.hpp"
#include "dataplane/worker.hpp"
#include "unit/dataplane/fake_ports.hpp"

namespace vnet::dataplane {
namespace {

using namespace std::chrono_literals;

// A guest TX ring stand-in that is never ready with packets, whose receive
// wait is a real kick eventfd counted into its rx counters.
class KickedSource : public testing::FakePushSource {
public:
    ports::WaitSpec receive_wait(uint16_t) const override { return {kick_.get(), 1, true, kicks_}; }
    void kick(uint64_t times) const {
        for (uint64_t i = 0; i < times; ++i) {
            const uint64_t one = 1;
            ASSERT_EQ(::write(kick_.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
        }
    }

private:
    UniqueFd kick_{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    packet::Counter* kicks_ = &rx.kicks;
};

bool wait_until(const std::function<bool()>& done) {
    for (auto until = std::chrono::steady_clock::now() + 5s; !done();) {
        if (std::chrono::steady_clock::now() > until) {
            return false;
        }
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

TEST(WorkerKicks, the_kicks_read_from_a_kick_eventfd_are_added_to_the_rings_counter) {
    KickedSource source;
    testing::FakeSink sink;
    WorkerOptions options;
    options.mode = WorkerMode::event;
    Worker worker{options};
    worker.add_engine(std::make_unique<ForwardPath>(source, 0, sink, 0, ports::QueuePairOptions{}));
    worker.start();
    ASSERT_TRUE(wait_until([&] { return worker.sleeps() >= 1; }));
    EXPECT_EQ(source.rx.kicks.get(), 0u);

    source.kick(3);  // before the worker reads: one wake-up, three kicks
    ASSERT_TRUE(wait_until([&] { return source.rx.kicks.get() == 3; }));
    source.kick(1);
    ASSERT_TRUE(wait_until([&] { return source.rx.kicks.get() == 4; }));
    worker.stop();
    EXPECT_EQ(source.rx.kicks.get(), 4u);
    EXPECT_EQ(source.tx.kicks.get(), 0u);  // the other direction's ring was never kicked
}

}  // namespace
}  // namespace vnet::dataplane
