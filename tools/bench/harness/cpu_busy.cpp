#include "harness/cpu_busy.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace vnet::bench {

double cpu_busy_seconds(int cpu) {
    std::ifstream in("/proc/stat");
    const std::string wanted = "cpu" + std::to_string(cpu);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string name;
        fields >> name;
        if (name != wanted) {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is
        // already inside user and nice).
        uint64_t v[8] = {};
        for (uint64_t& x : v) {
            fields >> x;
        }
        const uint64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        return static_cast<double>(busy) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
    throw std::runtime_error("/proc/stat has no line for " + wanted);
}

double process_cpu_seconds(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) {
        throw std::runtime_error("no /proc/" + std::to_string(pid) + "/stat");
    }
    // "pid (comm) state ...": comm may hold spaces, so count fields after
    // its closing parenthesis; utime and stime are fields 14 and 15.
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string skip;
    for (int field = 3; field < 14; ++field) {
        fields >> skip;
    }
    uint64_t utime = 0, stime = 0;
    fields >> utime >> stime;
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace vnet::bench
