#include "ports/tap/libbpf_log.hpp"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string_view>

#include "common/log.hpp"

namespace vnet::ports {
namespace {

__attribute__((format(printf, 2, 0))) int print_to_logger(libbpf_print_level, const char* format,
                                                          va_list args) {
    // Cold path (object open, load, attach); the verifier log can be long,
    // and a longer line is cut rather than dropped.
    char line[4096];
    int n = std::vsnprintf(line, sizeof(line), format, args);
    if (n <= 0) {
        return n;
    }
    std::string_view text(line);
    while (!text.empty() && text.back() == '\n') {
        text.remove_suffix(1);
    }
    static const Logger log = make_logger("libbpf");
    log->debug("{}", text);
    return n;
}

}  // namespace

void route_libbpf_log() {
    static std::once_flag once;
    std::call_once(once, [] { libbpf_set_print(print_to_logger); });
}

}  // namespace vnet::ports
