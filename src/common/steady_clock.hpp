// The datapath's one clock: steady_clock (CLOCK_MONOTONIC, which the
// workers' timerfd uses too) in nanoseconds, for deadlines, spin budgets
// and policing buckets that compare times taken in different places.
#pragma once

#include <chrono>
#include <cstdint>

namespace vnet {

inline uint64_t steady_now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

}  // namespace vnet
