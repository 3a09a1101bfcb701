// Busy time of one CPU from /proc/stat: everything but idle and iowait.
// A reader that is not the limit of its experiment (it sleeps while waiting
// for frames) shows as a CPU that is not fully busy; its CPU time per packet
// is then the figure that compares it with a peer, since the rate only says
// what the rest of the set-up delivered.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace vnet::bench {

// Seconds CPU `cpu` has been busy since boot (USER_HZ resolution, 10 ms).
// Throws std::runtime_error if /proc/stat has no line for it.
double cpu_busy_seconds(int cpu);

// CPU seconds process `pid` used since it started, all its threads (utime +
// stime of /proc/PID/stat, USER_HZ resolution): what a process costs on a
// CPU that others share. Throws std::runtime_error when it is gone.
double process_cpu_seconds(pid_t pid);

}  // namespace vnet::bench
