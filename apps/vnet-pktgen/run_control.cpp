#include "run_control.hpp"

#include <poll.h>
#include <signal.h>

#include <atomic>

namespace vnet::pktgen {
namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

void on_stop_signal(int) {
    g_stop.store(true, std::memory_order_relaxed);
}

}  // namespace

void install_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() {
    return g_stop.load(std::memory_order_relaxed);
}

RunDeadline::RunDeadline(Clock::time_point start, double duration_s) {
    if (duration_s > 0) {
        end_ = start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(duration_s));
    }
}

bool PeerWatch::closed(Clock::time_point now) {
    if (closed_ || now < next_check_) {
        return closed_;
    }
    next_check_ = now + std::chrono::milliseconds(100);
    pollfd p{fd_, POLLRDHUP, 0};
    closed_ = ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    return closed_;
}

RatePacer::RatePacer(uint64_t packets_per_second, Clock::time_point start)
    : rate_(packets_per_second), start_(start) {}

uint32_t RatePacer::allowance(Clock::time_point now, uint32_t max) const {
    if (rate_ == 0) {
        return max;
    }
    const auto elapsed_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - start_).count();
    const auto due = static_cast<uint64_t>(static_cast<long double>(elapsed_ns) * rate_ / 1e9L);
    if (due <= sent_) {
        return 0;
    }
    const uint64_t n = due - sent_;
    return n < max ? static_cast<uint32_t>(n) : max;
}

Clock::duration RatePacer::until_next(Clock::time_point now) const {
    if (rate_ == 0) {
        return Clock::duration::zero();
    }
    const auto due_ns = static_cast<int64_t>(static_cast<long double>(sent_ + 1) * 1e9L / rate_);
    const Clock::time_point due = start_ + std::chrono::nanoseconds(due_ns);
    return due > now ? due - now : Clock::duration::zero();
}

}  // namespace vnet::pktgen
