// Logging: spdlog loggers named after the port or socket they speak for, so
// every line says whose it is. Never called per packet.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace vnet {

using Logger = std::shared_ptr<spdlog::logger>;

// Returns the logger registered under `name`, creating it (stderr, shared
// sink and level) on first use.
Logger make_logger(const std::string& name);

// Sets the level of every existing and future logger ("trace".."off").
void set_log_level(const std::string& level);

}  // namespace vnet
