// Busy time of one CPU from /proc/stat: everything but idle and iowait.
// A reader that is not the limit of its experiment (it sleeps while waiting
// for frames) shows as a CPU that is not fully busy; its CPU time per packet
// is then the figure that compares it with a peer, since the rate only says
// what the rest of the set-up delivered.
#pragma once

#include <cstdint>

namespace vnet::bench {

// Seconds CPU `cpu` has been busy since boot (USER_HZ resolution, 10 ms).
// Throws std::runtime_error if /proc/stat has no line for it.
double cpu_busy_seconds(int cpu);

}  // namespace vnet::bench
