#include "harness/socket_wait.hpp"

#include <sys/stat.h>

#include <chrono>

#include "harness/interrupt.hpp"
#include "harness/rate_meter.hpp"

namespace vnet::bench {

bool is_socket(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

void wait_for_socket(const std::string& path, double timeout_s,
                     const std::function<std::string()>& failure, const std::string& creator,
                     const std::function<std::string()>& detail) {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    while (!is_socket(path)) {
        if (std::string why = failure(); !why.empty()) {
            throw MeasureError(why);
        }
        if (Clock::now() > end) {
            throw MeasureError(creator + " did not create " + path +
                               (detail ? ": " + detail() : std::string()));
        }
        sleep_for(0.02);
    }
}

}  // namespace vnet::bench
