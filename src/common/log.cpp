#include "common/log.hpp"
#include "common/log_format.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "common/log_levels.hpp"

namespace vnet {
namespace {

std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;
std::string g_level_name = "info";  // as given: spdlog calls warn "warning"

spdlog::sink_ptr shared_sink() {
    static auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    return sink;
}

// %* : the sd-daemon priority prefix of the line's level.
class PriorityFlag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        const std::string_view prefix = journal_priority(msg.level);
        dest.append(prefix.data(), prefix.data() + prefix.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<PriorityFlag>();
    }
};

// %~ : the message on one line (line breaks as spaces).
class OneLineMessageFlag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        for (char c : msg.payload) {
            dest.push_back(c == '\n' || c == '\r' ? ' ' : c);
        }
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<OneLineMessageFlag>();
    }
};

}  // namespace

const char* journal_priority(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::critical:
            return "<2>";
        case spdlog::level::err:
            return "<3>";
        case spdlog::level::warn:
            return "<4>";
        case spdlog::level::info:
            return "<6>";
        default:
            return "<7>";
    }
}

bool stderr_is_journal() {
    const char* stream = std::getenv("JOURNAL_STREAM");
    unsigned long long device = 0, inode = 0;
    if (stream == nullptr || std::sscanf(stream, "%llu:%llu", &device, &inode) != 2) {
        return false;
    }
    struct stat st {};
    return ::fstat(STDERR_FILENO, &st) == 0 && st.st_dev == device && st.st_ino == inode;
}

std::unique_ptr<spdlog::formatter> make_log_formatter(bool journal) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<PriorityFlag>('*').add_flag<OneLineMessageFlag>('~');
    formatter->set_pattern(journal ? "%*[%n] %~" : "%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %~");
    return formatter;
}

Logger make_logger(const std::string& name) {
    std::lock_guard lock(g_mutex);
    if (auto existing = spdlog::get(name)) {
        return existing;
    }
    static const bool journal = stderr_is_journal();
    auto logger = std::make_shared<spdlog::logger>(name, shared_sink());
    logger->set_level(g_level);
    logger->set_formatter(make_log_formatter(journal));
    spdlog::register_logger(logger);
    return logger;
}

bool is_log_level(std::string_view level) {
    // spdlog's from_str() reads any word it does not know as "off".
    for (std::string_view known : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
        if (level == known) {
            return true;
        }
    }
    return false;
}

std::string log_level_refusal(std::string_view what, std::string_view level) {
    // Appended step by step: g++ 12 warns falsely on a chain of + here.
    std::string text(what);
    text += " must be one of ";
    text += kLogLevels;
    text += ", not '";
    text += level;
    text += "'";
    return text;
}

void set_log_level(const std::string& level) {
    if (!is_log_level(level)) {
        throw std::invalid_argument(log_level_refusal("log level", level));
    }
    std::lock_guard lock(g_mutex);
    g_level = spdlog::level::from_str(level);
    g_level_name = level;
    spdlog::set_level(g_level);
}

std::string log_level() {
    std::lock_guard lock(g_mutex);
    return g_level_name;
}

}  // namespace vnet
