#include "harness/bench_log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>

namespace vnet::bench {
namespace {

std::shared_ptr<spdlog::logger> g_logger;

}  // namespace

void init_bench_log(const std::string& file, bool verbose) {
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    console->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
    console->set_pattern("[%H:%M:%S] %^%l%$ %v");
    std::vector<spdlog::sink_ptr> sinks{console};
    if (!file.empty()) {
        auto to_file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, true);
        to_file->set_level(spdlog::level::debug);
        to_file->set_pattern("[%H:%M:%S.%e] %l %v");
        sinks.push_back(to_file);
    }
    g_logger = std::make_shared<spdlog::logger>("vnet-bench", sinks.begin(), sinks.end());
    g_logger->set_level(spdlog::level::debug);
    g_logger->flush_on(spdlog::level::debug);
}

spdlog::logger& blog() {
    if (!g_logger) {
        init_bench_log("", false);
    }
    return *g_logger;
}

std::string shell_join(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& a : argv) {
        if (!out.empty()) {
            out += ' ';
        }
        const bool plain = !a.empty() && a.find_first_not_of(
                                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789_-+=/.,:@%") == std::string::npos;
        if (plain) {
            out += a;
            continue;
        }
        out += '\'';
        for (char c : a) {
            out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        out += '\'';
    }
    return out;
}

}  // namespace vnet::bench
