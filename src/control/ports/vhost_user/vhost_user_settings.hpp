// A vhost-user port's own [[port]] keys (docs/USAGE.md "Ports"): the
// socket it serves or connects to, and how that socket is made.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vnet::control {

struct Config;
struct OptionSpec;
struct PortConfig;

// Queue pairs a VM port offers unless told otherwise: the front end enables
// what it wants of them (QEMU queues=N, virtio-user queues=N, ethtool -L).
inline constexpr uint16_t kDefaultQueuePairs = 8;

struct VhostUserSettings {
    static constexpr std::string_view kind = "vhost-user";
    // The kind's rows of the option table (vhost_user_options.cpp).
    static std::span<const OptionSpec> options();

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

    // What the front end may enable unless queue_pairs says (GET_QUEUE_NUM):
    // a VM port serves what it asks for; the port at its other end follows.
    static constexpr uint16_t default_queue_pairs = kDefaultQueuePairs;
    // The socket: one of socket_path and listen_fd, absolute, and no other
    // port's. Throws std::invalid_argument naming the port.
    void validate(const PortConfig& port, const Config& config) const;
};

}  // namespace vnet::control
