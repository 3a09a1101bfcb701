// vnetd's log lines: one line per event, and journald-friendly under
// systemd (sd-daemon priority prefix, no timestamp of our own) when
// JOURNAL_STREAM names stderr. The stats summary is one line too.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "common/log.hpp"
#include "common/log_format.hpp"
#include "control/metrics/stats_report.hpp"
#include "ports/null/null_port.hpp"

namespace vnet {
namespace {

std::string formatted(bool journal, spdlog::level::level_enum level, const std::string& text) {
    const std::unique_ptr<spdlog::formatter> f = make_log_formatter(journal);
    spdlog::details::log_msg msg("vm0", level, text);
    spdlog::memory_buf_t out;
    f->format(msg, out);
    return std::string(out.data(), out.size());
}

TEST(LogFormat, journal_lines_carry_the_priority_and_no_timestamp) {
    EXPECT_EQ(formatted(true, spdlog::level::err, "bind failed"), "<3>[vm0] bind failed\n");
    EXPECT_EQ(formatted(true, spdlog::level::warn, "w"), "<4>[vm0] w\n");
    EXPECT_EQ(formatted(true, spdlog::level::info, "i"), "<6>[vm0] i\n");
    EXPECT_EQ(formatted(true, spdlog::level::debug, "d"), "<7>[vm0] d\n");
    EXPECT_EQ(formatted(true, spdlog::level::critical, "c"), "<2>[vm0] c\n");
}

TEST(LogFormat, terminal_lines_start_with_a_timestamp_and_the_level) {
    const std::string line = formatted(false, spdlog::level::warn, "w");
    EXPECT_TRUE(std::regex_match(
        line, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} warning \[vm0\] w\n)")))
        << line;
}

TEST(LogFormat, one_event_is_one_line) {
    EXPECT_EQ(formatted(true, spdlog::level::info, "stats:\nvm0 rx 1\r\nvm0 tx 2"),
              "<6>[vm0] stats: vm0 rx 1  vm0 tx 2\n");
}

TEST(LogFormat, journal_stream_must_name_stderr) {
    struct stat st {};
    ASSERT_EQ(::fstat(STDERR_FILENO, &st), 0);
    const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
    ::setenv("JOURNAL_STREAM", mine.c_str(), 1);
    EXPECT_TRUE(stderr_is_journal());
    // Inherited by a child whose stderr went elsewhere: not the journal.
    ::setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":1").c_str(), 1);
    EXPECT_FALSE(stderr_is_journal());
    ::setenv("JOURNAL_STREAM", "garbage", 1);
    EXPECT_FALSE(stderr_is_journal());
    ::unsetenv("JOURNAL_STREAM");
    EXPECT_FALSE(stderr_is_journal());
}

TEST(LogFormat, the_stats_summary_is_one_line) {
    ports::NullPort vm0("vm0", 4);
    ports::NullPort t0("t0", 1);
    vm0.rx_counters(0).count_burst(4, 256);
    vm0.rx_counters(2).count_burst(2, 128);
    t0.tx_counters(0).count_drop(packet::DropReason::no_destination, 3);
    const std::string s = control::stats_summary({&vm0, &t0}, 2.0);
    EXPECT_EQ(s.find('\n'), std::string::npos);
    EXPECT_EQ(s,
              "vm0/0 rx 4 pkts 0.000 Mpps 0.000 Gbit/s burst 4.0 drops 0; "
              "vm0/0 tx 0 pkts 0.000 Mpps 0.000 Gbit/s burst 0.0 drops 0; "
              "vm0/2 rx 2 pkts 0.000 Mpps 0.000 Gbit/s burst 2.0 drops 0; "
              "vm0/2 tx 0 pkts 0.000 Mpps 0.000 Gbit/s burst 0.0 drops 0; "
              "t0/0 rx 0 pkts 0.000 Mpps 0.000 Gbit/s burst 0.0 drops 0; "
              "t0/0 tx 0 pkts 0.000 Mpps 0.000 Gbit/s burst 0.0 drops 3");
    EXPECT_EQ(control::stats_summary({}, 1.0), "no ports");
}

}  // namespace
}  // namespace vnet
