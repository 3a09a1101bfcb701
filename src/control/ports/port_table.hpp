// PortTable: the daemon's ports. Builds each by its kind's entry in
// port_factory.hpp, places its queue pairs on the workers (its
// cross-connect's group by the placement rule, or its switch's worker),
// cross-connects two ports with paths both ways (each style chosen by
// dataplane/ from the ends' capabilities), starts and stops the ports'
// services (vhost-user sockets), and adds and removes ports at run time
// (vnetctl port add/del, reload) keeping the running config in step. It
// answers the ports' control methods (PortControl; port_control.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "control/config/config.hpp"
#include "control/control_queue.hpp"
#include "control/lifecycle/upgrade/upgrader.hpp"
#include "control/ports/port_factory.hpp"
#include "control/rpc/control_api.hpp"
#include "dataplane/ingress_policer.hpp"
#include "dataplane/placement.hpp"
#include "dataplane/worker.hpp"
#include "io/epoll_reactor.hpp"
#include "ports/port.hpp"

namespace vnet::control {

// A switch's id: given in the order switches are made (the config's, then
// vnetctl's), never reused, so it stays valid whatever is deleted.
using SwitchId = size_t;

// What the port table asks of the switches: the one way a port joins or
// leaves one, and the worker that owns a switch (and so every queue pair of
// a port on it).
class SwitchMembership {
public:
    // The switch's worker attaches the port between rounds. `config` names
    // the switch and the port's VLAN and MAC keys. Throws
    // std::invalid_argument (no such switch, switch full).
    virtual SwitchId attach_to_switch(const PortConfig& config, ports::Port& port) = 0;
    // False if the port is on no switch.
    virtual bool detach_from_switch(const ports::Port& port) = 0;
    virtual dataplane::Worker& worker_of_switch(SwitchId id) = 0;

protected:
    ~SwitchMembership() = default;
};

struct PortEntry {
    std::string_view kind;  // its factory's kind name
    std::unique_ptr<ports::Port> port;
    // What dataplane::Placement places its queue pairs by: the index of its
    // cross-connect at start-up, a new number for one added at run time
    // (the two ends of a cross-connect share it). Fixed for the port's
    // life, so its queue pairs never change worker.
    size_t placement_group = 0;
    // The switch it is on, if any: its worker owns every queue pair of the
    // port.
    std::optional<SwitchId> switch_id;
    // Its ingress policing bucket, shared by the paths from it.
    std::unique_ptr<dataplane::IngressPolicer> policer;
    // Declared after the port: goes first, also when a constructor throws.
    std::unique_ptr<PortService> service;
};

class PortTable final : public PortControl {
public:
    // What the table is built on: the daemon's, all outliving it.
    struct Wiring {
        Config& config;  // the running config: add/remove keep it in step
        const Logger& log;
        io::EpollReactor& reactor;
        ControlQueue& control_queue;
        const std::vector<std::unique_ptr<dataplane::Worker>>& workers;
        const dataplane::Placement& placement;
        SwitchMembership& switches;
        // Upgrade in place: the fds the vnetd we replace offered for a
        // port, or null.
        std::function<std::vector<UniqueFd>*(const PortConfig&)> handed_over;
        // Called after each change the table made (a port added or removed,
        // its policing set): the daemon keeps its state file in step.
        std::function<void()> changed;
    };
    explicit PortTable(Wiring wiring);
    PortTable(const PortTable&) = delete;
    PortTable& operator=(const PortTable&) = delete;

    // Start-up: the config's ports (each on its switch, if it names one),
    // then the config's cross-connects.
    void open_config_ports();
    // Run time (control thread; vnetctl port add/del). add_port builds the
    // port, cross-connects it to `peer` (an existing port in no
    // cross-connect) if given and starts it; remove_port disconnects a
    // connected guest, takes the port's paths off the workers (what they
    // held goes back to the source as no_destination drops) and closes it.
    // Both throw std::invalid_argument naming what is wrong and then change
    // nothing.
    void add_port(PortConfig port, const std::string& peer);
    void remove_port(const std::string& name) override;

    // The control methods (port_control.cpp). add_port parses `settings`
    // through the option table, then adds as above; set_port_policing
    // changes the bucket on the worker of the port's queue pair 0 (a
    // command between rounds).
    nlohmann::json list_ports() override;
    nlohmann::json show_ports(const std::optional<std::string>& only) override;
    void add_port(const std::string& name, const std::string& type, const std::string& peer,
                  const Settings& settings) override;
    nlohmann::json set_port_policing(const std::string& name, std::optional<uint32_t> rate,
                                     std::optional<uint32_t> burst) override;

    // The ports' services: a port added before start_services (the state
    // file's, at start-up) is started with the others.
    void start_services();
    void stop_services();
    // Every port closed (after the workers stopped).
    void clear() { ports_.clear(); }

    PortEntry* entry_named(const std::string& name);
    PortEntry* entry_of(const ports::Port& port);
    ports::Port* port_named(const std::string& name);
    // The worker that owns queue pair `queue` of the port named so: its
    // switch's, or its cross-connect's by the placement rule.
    dataplane::Worker& owner_of(const std::string& port_name, uint16_t queue);

    // Upgrade in place: every port's fds to hand over, by its factory's
    // handover_fds (a kind without one is built afresh by the successor).
    std::vector<upgrade::HandoverOffer> handover_offers();

    // In config order, then as added.
    size_t size() const { return ports_.size(); }
    std::vector<PortEntry>::iterator begin() { return ports_.begin(); }
    std::vector<PortEntry>::iterator end() { return ports_.end(); }
    std::vector<PortEntry>::const_iterator begin() const { return ports_.begin(); }
    std::vector<PortEntry>::const_iterator end() const { return ports_.end(); }

private:
    PortEntry build_port(const PortConfig& config, size_t placement_group);
    // The paths both ways between two ports, on the worker of their group.
    void connect_ports(PortEntry& a, PortEntry& b);
    // Every path from or to `port`, off its worker.
    void disconnect_port(const ports::Port& port);
    // A `peer` without a front end to negotiate offloads takes any GSO
    // frame: `port` is told so (a tap then takes 64 KB frames from the host).
    void offer_gso(ports::Port& port, const ports::Port& peer);
    // add_port's second half: on its switch, connected and started, or
    // undone and the reason thrown.
    void wire_added_port(const PortConfig& pc, PortEntry* peer_entry);

    Wiring w_;
    std::vector<PortEntry> ports_;
    size_t next_placement_group_ = 0;
    bool services_started_ = false;
};

}  // namespace vnet::control
