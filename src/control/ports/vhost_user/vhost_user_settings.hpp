// A vhost-user port's own [[port]] keys (docs/USAGE.md "Ports"): the
// socket it serves or connects to, and how that socket is made.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace vnet::control {

struct VhostUserSettings {
    static constexpr std::string_view kind = "vhost-user";

    std::string socket_path;
    bool client = false;  // connect to a listening front end instead of listening
    int listen_fd = -1;   // an inherited listening socket (--fd) instead of socket_path
    std::optional<uid_t> socket_owner;
    std::optional<gid_t> socket_group;
    std::optional<mode_t> socket_mode;
    // Whole GSO frames from other guests written into this guest's buffers
    // with streaming stores (packet/streaming_copy.hpp); off where the
    // guest's vCPUs share the worker's CPU.
    bool streaming_stores = true;
};

}  // namespace vnet::control
