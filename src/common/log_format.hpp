// How a log line looks (common/log.hpp's loggers use it).
//
// One event, one line: a message's line breaks are written as spaces (a
// multi-line message would be several journal entries, and grep would see
// half of it). Under systemd (JOURNAL_STREAM names our stderr) a line
// carries no timestamp of its own (the journal stamps it) and starts with
// its sd-daemon(3) priority, "<3>" for an error ... "<7>" for debug, which
// journald files it under (journalctl -p warning); on a terminal it starts
// with an ISO 8601 timestamp and the level.
#pragma once

#include <spdlog/common.h>
#include <spdlog/formatter.h>

#include <memory>

namespace vnet {

// True if stderr is the journal stream systemd gave this process
// (JOURNAL_STREAM is "DEVICE:INODE" of stderr, systemd.exec(5)).
bool stderr_is_journal();

// The line format: for the journal (priority prefix, no timestamp) or for
// a terminal or file.
std::unique_ptr<spdlog::formatter> make_log_formatter(bool journal);

// sd-daemon(3)'s prefix for `level`: "<3>" (err) ... "<7>" (debug, trace).
const char* journal_priority(spdlog::level::level_enum level);

}  // namespace vnet
