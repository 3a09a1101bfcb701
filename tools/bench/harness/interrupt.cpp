#include "harness/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "harness/process.hpp"

namespace vnet::bench {
namespace {

std::atomic<int> g_signals{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

void on_signal(int) {
    if (g_signals.fetch_add(1, std::memory_order_relaxed) > 0) {
        kill_registered_children();  // async-signal-safe: kill(2) only
        _exit(130);
    }
}

}  // namespace

void install_interrupt_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        sigaction(sig, &sa, nullptr);
    }
}

bool interrupted() {
    return g_signals.load(std::memory_order_relaxed) > 0;
}

void throw_if_interrupted() {
    if (interrupted()) {
        throw Interrupted();
    }
}

void sleep_for(double seconds) {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
    for (;;) {
        throw_if_interrupted();
        const auto now = Clock::now();
        if (now >= end) {
            return;
        }
        std::this_thread::sleep_for(
            std::min<Clock::duration>(end - now, std::chrono::milliseconds(50)));
    }
}

}  // namespace vnet::bench
