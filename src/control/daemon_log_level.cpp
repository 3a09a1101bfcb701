// log.level (vnetctl log level): every logger's level at run time. The
// running config keeps it, so the state a reload compares with is true; a
// restart goes back to the config's or the command line's.
#include "common/log_levels.hpp"
#include "control/daemon.hpp"

namespace vnet::control {

nlohmann::json Daemon::log_level(const std::optional<std::string>& level) {
    if (level) {
        set_log_level(*level);  // throws std::invalid_argument for a level it does not know
        config_.log_level = *level;
    }
    return nlohmann::json{{"level", vnet::log_level()}};
}

}  // namespace vnet::control
