// The process metrics every Prometheus exporter gives, under the names the
// official clients use (process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds), read
// from /proc/self at each scrape, so dashboards and alerts written for any
// exporter work on vnetd.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "control/metrics/metrics.hpp"

namespace vnet::control {

struct ProcessSample {
    double cpu_seconds = 0;
    uint64_t resident_bytes = 0;
    uint64_t virtual_bytes = 0;
    uint64_t open_fds = 0;
    uint64_t max_fds = 0;
    double start_time_seconds = 0;  // since the Unix epoch
};

// The fields of /proc/self/stat (proc(5)) a sample takes: utime, stime,
// starttime (in clock ticks), vsize (bytes), rss (pages). Nothing if the
// text is not such a line. `boot_time` is /proc/stat's btime.
std::optional<ProcessSample> parse_proc_stat(std::string_view stat, long ticks_per_second,
                                             long page_size, uint64_t boot_time);

// This process now (open and max fds included); nothing if /proc cannot be
// read.
std::optional<ProcessSample> read_process_sample();

// The six families from `sample`.
void add_process_families(const ProcessSample& sample, MetricFamilies& out);

}  // namespace vnet::control
