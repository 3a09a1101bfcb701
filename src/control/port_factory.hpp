// The port factory: one entry per port kind, building the port (and what the
// control thread runs for it) from its [[port]] config. The daemon only
// wires what the entries build, so a new kind is one folder in ports/ and
// one entry in port_factory.cpp.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string_view>

#include "common/log.hpp"
#include "control/config.hpp"
#include "control/control_queue.hpp"
#include "io/reactor.hpp"
#include "ports/port.hpp"

namespace vnet::control {

// What the control thread runs for a port beyond the port itself: a VM
// port's vhost-user sockets. Started once the workers run and every port
// exists; destroyed before the workers stop (closing a connection hands
// its rings back through them).
class PortService {
public:
    virtual ~PortService() = default;
    // `peer`: the port at the other end of the cross-connect, if any.
    virtual void start(ports::Port* peer) = 0;
    // The cross-connect changed at run time (vnetctl port add/del): the
    // port at the other end is now `peer` (nullptr: none, it is going
    // away). Nothing may refer to the old peer afterwards.
    virtual void set_peer(ports::Port* peer) = 0;
    // Front ends connected now (the control socket's port list).
    virtual size_t connections() = 0;
    // What `vnetctl show` (port.show) tells about the port beyond its
    // config and counters, as members of `out`: a VM port's socket, its
    // front end's features and memory, and every ring.
    virtual void show(nlohmann::json& /*out*/) {}
};

// What a factory may use, from the daemon.
struct PortContext {
    const Config& config;
    const Logger& log;
    io::Reactor& reactor;
    ControlQueue& control_queue;  // how a worker hands work to the control thread
    // Runs `work` on the worker that owns the port's queue pair `queue` and
    // returns once it ran (dataplane::Worker::run_sync).
    std::function<void(uint16_t queue, const std::function<void()>& work)> run_on_owner;
};

struct BuiltPort {
    std::unique_ptr<ports::Port> port;
    std::unique_ptr<PortService> service;  // null: the port needs none
};

struct PortFactoryEntry {
    std::string_view kind;  // the [[port]] type; also the "kind" of the stats
    BuiltPort (*build)(const PortConfig& config, const PortContext& context);
};

// Every entry, one per kind.
std::span<const PortFactoryEntry> port_factories();
// The entry for `kind`; nullptr if there is none.
const PortFactoryEntry* find_port_factory(std::string_view kind);

// The entries' builders, one file each.
BuiltPort build_null_port(const PortConfig& config, const PortContext& context);
BuiltPort build_tap_port(const PortConfig& config, const PortContext& context);
BuiltPort build_vhost_user_port(const PortConfig& config, const PortContext& context);

}  // namespace vnet::control
