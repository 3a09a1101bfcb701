#include "control/metrics/process_metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace vnet::control {
namespace {

std::string read_whole(const char* path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t boot_time() {
    std::istringstream in(read_whole("/proc/stat"));
    std::string key;
    uint64_t value = 0;
    while (in >> key) {
        if (key == "btime" && in >> value) {
            return value;
        }
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return 0;
}

uint64_t open_fds() {
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) {
        return 0;
    }
    uint64_t n = 0;
    while (const dirent* e = ::readdir(dir)) {
        n += e->d_name[0] != '.' ? 1 : 0;
    }
    ::closedir(dir);
    return n - 1;  // not the one opendir itself holds
}

prometheus::MetricFamily gauge(const char* name, const char* help, double value,
                               prometheus::MetricType type = prometheus::MetricType::Gauge) {
    prometheus::ClientMetric m;
    if (type == prometheus::MetricType::Counter) {
        m.counter.value = value;
    } else {
        m.gauge.value = value;
    }
    return prometheus::MetricFamily{name, help, type, {m}};
}

}  // namespace

std::optional<ProcessSample> parse_proc_stat(std::string_view stat, long ticks_per_second,
                                             long page_size, uint64_t boot_time_s) {
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses,
    // so the fields are counted from the last ')'; state is field 3.
    const size_t close = stat.rfind(')');
    if (close == std::string_view::npos || ticks_per_second <= 0) {
        return std::nullopt;
    }
    std::istringstream in(std::string(stat.substr(close + 1)));
    std::vector<std::string> fields{"", ""};  // pid and comm: fields[n - 1] is field n
    for (std::string f; in >> f;) {
        fields.push_back(f);
    }
    // proc(5), 1-based: utime 14, stime 15, starttime 22, vsize 23, rss 24.
    if (fields.size() < 24) {
        return std::nullopt;
    }
    try {
        auto field = [&](size_t n) { return std::stoull(fields[n - 1]); };
        ProcessSample s;
        const double tick = 1.0 / static_cast<double>(ticks_per_second);
        s.cpu_seconds = static_cast<double>(field(14) + field(15)) * tick;
        s.start_time_seconds =
            static_cast<double>(boot_time_s) + static_cast<double>(field(22)) * tick;
        s.virtual_bytes = field(23);
        s.resident_bytes = field(24) * static_cast<uint64_t>(page_size);
        return s;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::optional<ProcessSample> read_process_sample() {
    std::optional<ProcessSample> s =
        parse_proc_stat(read_whole("/proc/self/stat"), ::sysconf(_SC_CLK_TCK),
                        ::sysconf(_SC_PAGESIZE), boot_time());
    if (!s) {
        return std::nullopt;
    }
    s->open_fds = open_fds();
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
        s->max_fds = limit.rlim_cur;
    }
    return s;
}

void add_process_families(const ProcessSample& s, MetricFamilies& out) {
    out.push_back(gauge("process_cpu_seconds_total",
                        "Total user and system CPU time spent in seconds.", s.cpu_seconds,
                        prometheus::MetricType::Counter));
    out.push_back(gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                        static_cast<double>(s.resident_bytes)));
    out.push_back(gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                        static_cast<double>(s.virtual_bytes)));
    out.push_back(gauge("process_open_fds", "Number of open file descriptors.",
                        static_cast<double>(s.open_fds)));
    out.push_back(gauge("process_max_fds", "Maximum number of open file descriptors.",
                        static_cast<double>(s.max_fds)));
    out.push_back(gauge("process_start_time_seconds",
                        "Start time of the process since unix epoch in seconds.",
                        s.start_time_seconds));
}

}  // namespace vnet::control
