#include "control/ports/vhost_user/vhost_user_settings.hpp"

#include <stdexcept>

#include "control/config/config.hpp"

namespace vnet::control {

void VhostUserSettings::validate(const PortConfig& port, const Config& config) const {
    const std::string where = "port '" + port.name + "': ";
    if (socket_path.empty() && listen_fd < 0) {
        throw std::invalid_argument(where + "socket_path is required");
    }
    // vhost-user.rst "Backend program conventions": --fd "is incompatible
    // with --socket-path". An inherited socket is already listening, so
    // there is nothing to connect to either.
    if (listen_fd >= 0 && !socket_path.empty()) {
        throw std::invalid_argument(
            "--fd and --socket-path cannot be given together: --fd serves a listening "
            "socket vnetd inherited, --socket-path makes one");
    }
    if (listen_fd >= 0 && client) {
        throw std::invalid_argument(
            "--fd and --client cannot be given together: --fd is a listening socket");
    }
    // Absolute, as every path vnetd keeps (Config::validate says why).
    if (!socket_path.empty() && socket_path.front() != '/') {
        throw std::invalid_argument(where + "socket_path must be an absolute path, not '" +
                                    socket_path + "'");
    }
    if (socket_path.size() >= 108) {
        throw std::invalid_argument(where +
                                    "socket_path is longer than a unix socket allows (107)");
    }
    if (socket_path.empty()) {
        return;
    }
    // Said of the second of two ports with the same path.
    for (const PortConfig& other : config.ports) {
        if (&other == &port) {
            break;
        }
        const VhostUserSettings* v = other.get<VhostUserSettings>();
        if (v != nullptr && v->socket_path == socket_path) {
            throw std::invalid_argument(where + "socket_path " + socket_path +
                                        " is another port's");
        }
    }
}

}  // namespace vnet::control
