// The port factory: one entry per port kind, building the port (and what the
// control thread runs for it) from its [[port]] config. The daemon only
// wires what the entries build, so a new kind is one folder in ports/ and
// one entry in port_factory.cpp.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "control/config/config.hpp"
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
    // Upgrade in place (control/lifecycle/upgrade/): the fds the successor takes
    // over, and then letting go of them (a socket's path stays, for the
    // successor serves it now).
    virtual std::vector<int> handover_fds() { return {}; }
    virtual void hand_over() {}
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
    // Upgrade in place: the fds the vnetd we replace held for this port
    // (its factory's handover_key matched); the builder takes what it uses.
    std::vector<UniqueFd>* handed_over = nullptr;
};

struct BuiltPort {
    std::unique_ptr<ports::Port> port;
    std::unique_ptr<PortService> service;  // null: the port needs none
};

struct PortFactoryEntry {
    std::string_view kind;  // the [[port]] type; also the "kind" of the stats
    BuiltPort (*build)(const PortConfig& config, const PortContext& context);
    // Upgrade in place: what must be the same in the old and the new config
    // for the new vnetd to take a port's fds over (the socket path, the
    // tap's name), and the fds (the port's, else its service's). Null: the
    // kind hands nothing over; the successor builds it afresh.
    std::string (*handover_key)(const PortConfig& config) = nullptr;
    std::vector<int> (*handover_fds)(ports::Port& port, PortService* service) = nullptr;
    // port.list: the kind's own members of a port's entry (where it is: a
    // socket path, a tap's name, a tunnel's VNI and devices). Null: none.
    void (*list_fields)(const PortConfig& config, nlohmann::json& out) = nullptr;
    // A port of this kind on a switch with a VXLAN uplink gets the tunnel's
    // MTU unless its config sets one: its frames must fit encapsulated.
    bool takes_uplink_mtu = false;
    // A switch uplink's remote peers (uplink.peer.add/del): adds or removes
    // `address` through the port's service and keeps `config` in step;
    // returns how many peers it has now. Throws std::invalid_argument (a
    // bad address, a peer there already or not there). Null: the kind is
    // no uplink.
    size_t (*change_peer)(PortService& service, PortConfig& config, const std::string& address,
                          bool add) = nullptr;
};

// Every GUEST_* offload: what a port whose peer is no guest (another tap,
// a switch, which segments for the guests that cannot take GSO) is told
// its peer takes, so a tap lets the kernel hand it whole GSO frames.
virtio::FeatureSet every_guest_offload();

// Every entry, one per kind.
std::span<const PortFactoryEntry> port_factories();
// The entry for `kind`; nullptr if there is none.
const PortFactoryEntry* find_port_factory(std::string_view kind);

// The entries' builders, one file each.
BuiltPort build_null_port(const PortConfig& config, const PortContext& context);
BuiltPort build_tap_port(const PortConfig& config, const PortContext& context);
BuiltPort build_vhost_user_port(const PortConfig& config, const PortContext& context);
BuiltPort build_vxlan_port(const PortConfig& config, const PortContext& context);
// Their hand-over entries (upgrade in place).
std::string tap_handover_key(const PortConfig& config);
std::vector<int> tap_handover_fds(ports::Port& port, PortService* service);
std::string vhost_user_handover_key(const PortConfig& config);
std::vector<int> service_handover_fds(ports::Port& port, PortService* service);
std::string vxlan_handover_key(const PortConfig& config);
std::vector<int> vxlan_handover_fds(ports::Port& port, PortService* service);
// Their port.list members.
void vhost_user_list_fields(const PortConfig& config, nlohmann::json& out);
void tap_list_fields(const PortConfig& config, nlohmann::json& out);
void vxlan_list_fields(const PortConfig& config, nlohmann::json& out);
size_t vxlan_change_peer(PortService& service, PortConfig& config, const std::string& address,
                         bool add);

}  // namespace vnet::control
