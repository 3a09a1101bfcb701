// When a run ends (SIGINT/SIGTERM, --duration, --count) and how fast it may
// go (--rate). Checked once per burst, never per packet.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "common/cpu_relax.hpp"

namespace vnet::pktgen {

using Clock = std::chrono::steady_clock;

// Installs SIGINT/SIGTERM handlers that only set a flag (no SA_RESTART, so
// blocking calls return EINTR; SA_RESETHAND, so a second signal kills).
void install_stop_signals();
bool stop_requested();

class RunDeadline {
public:
    RunDeadline(Clock::time_point start, double duration_s);
    bool passed(Clock::time_point now) const { return end_ && now >= *end_; }

private:
    std::optional<Clock::time_point> end_;
};

// Token bucket without burst credit: at time t, at most rate * (t - start)
// packets in total. Unpaced (rate 0) always allows `max`.
class RatePacer {
public:
    RatePacer(uint64_t packets_per_second, Clock::time_point start);
    uint32_t allowance(Clock::time_point now, uint32_t max) const;
    void consumed(uint32_t n) { sent_ += n; }
    // Time until the next packet is due (zero when one is due now).
    Clock::duration until_next(Clock::time_point now) const;
    bool paced() const { return rate_ != 0; }

private:
    uint64_t rate_;
    Clock::time_point start_;
    uint64_t sent_ = 0;
};

// Notices a back end that went away (closed the vhost-user socket): the
// rings give no sign of it, so the socket is polled, at most every 100 ms.
class PeerWatch {
public:
    explicit PeerWatch(int socket_fd) : fd_(socket_fd) {}
    bool closed(Clock::time_point now);

private:
    int fd_;
    Clock::time_point next_check_{};
    bool closed_ = false;
};

// Spin loops pause with vnet::cpu_relax (common/cpu_relax.hpp).
using vnet::cpu_relax;

}  // namespace vnet::pktgen
