// One stats line on stderr every --stats-interval seconds: totals and the
// rate over the last interval. stdout is kept for the final report that
// scripts parse.
#pragma once

#include <cstdint>

#include "run_control.hpp"

namespace vnet::pktgen {

class PeriodicStats {
public:
    PeriodicStats(const char* label, double interval_s, Clock::time_point start);

    // Cheap when no line is due: one comparison.
    void tick(Clock::time_point now, uint64_t packets, uint64_t bytes, uint64_t bad = 0,
              uint64_t lost = 0) {
        if (enabled_ && now >= next_) {
            print(now, packets, bytes, bad, lost);
        }
    }

private:
    void print(Clock::time_point now, uint64_t packets, uint64_t bytes, uint64_t bad,
               uint64_t lost);

    const char* label_;
    bool enabled_;
    Clock::duration interval_;
    Clock::time_point start_;
    Clock::time_point next_;
    Clock::time_point last_;
    uint64_t last_packets_ = 0;
    uint64_t last_bytes_ = 0;
};

}  // namespace vnet::pktgen
