#include "periodic_stats.hpp"

#include <cstdio>

namespace vnet::pktgen {

PeriodicStats::PeriodicStats(const char* label, double interval_s, Clock::time_point start)
    : label_(label),
      enabled_(interval_s > 0),
      interval_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(interval_s > 0 ? interval_s : 1))),
      start_(start),
      next_(start + interval_),
      last_(start) {}

void PeriodicStats::print(Clock::time_point now, uint64_t packets, uint64_t bytes, uint64_t bad,
                          uint64_t lost) {
    const double dt = std::chrono::duration<double>(now - last_).count();
    const double t = std::chrono::duration<double>(now - start_).count();
    const double pps = dt > 0 ? static_cast<double>(packets - last_packets_) / dt : 0;
    const double gbps = dt > 0 ? static_cast<double>(bytes - last_bytes_) * 8 / dt / 1e9 : 0;
    // Totals with the time to the millisecond: a reader (vnet-bench) takes
    // rates over windows from two such lines.
    std::fprintf(stderr, "[%9.3fs] %s %llu pkts %llu bytes %.3f Mpps %.3f Gbit/s", t, label_,
                 static_cast<unsigned long long>(packets), static_cast<unsigned long long>(bytes),
                 pps / 1e6, gbps);
    if (bad != 0 || lost != 0) {
        std::fprintf(stderr, " bad %llu lost %llu", static_cast<unsigned long long>(bad),
                     static_cast<unsigned long long>(lost));
    }
    std::fputc('\n', stderr);
    last_ = now;
    last_packets_ = packets;
    last_bytes_ = bytes;
    while (next_ <= now) {
        next_ += interval_;
    }
}

}  // namespace vnet::pktgen
