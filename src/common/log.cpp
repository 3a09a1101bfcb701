#include "common/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace vnet {
namespace {

std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;

spdlog::sink_ptr shared_sink() {
    static auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    return sink;
}

}  // namespace

Logger make_logger(const std::string& name) {
    std::lock_guard lock(g_mutex);
    if (auto existing = spdlog::get(name)) {
        return existing;
    }
    auto logger = std::make_shared<spdlog::logger>(name, shared_sink());
    logger->set_level(g_level);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v");
    spdlog::register_logger(logger);
    return logger;
}

void set_log_level(const std::string& level) {
    std::lock_guard lock(g_mutex);
    g_level = spdlog::level::from_str(level);
    spdlog::set_level(g_level);
}

}  // namespace vnet
