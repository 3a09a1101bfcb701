// SwitchTable: the daemon's switches. One SwitchDatapath per switch (a
// [[switch]] of the config, or one vnetctl switch add made), owned by the
// worker the placement rule gives it and read only through it (run_sync),
// so the datapath takes no lock; and the one way ports join and leave one,
// at start-up and at run time (the port table asks it as its
// SwitchMembership). It answers the switches' control methods
// (SwitchControl; switch_control.cpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "control/config/config.hpp"
#include "control/ports/port_table.hpp"
#include "control/rpc/control_api.hpp"
#include "dataplane/placement.hpp"
#include "dataplane/switch/switch_datapath.hpp"
#include "dataplane/worker.hpp"
#include "io/reactor.hpp"

namespace vnet::control {

namespace evpn {
class EvpnFdbSync;
}

struct SwitchEntry {
    SwitchId id;
    std::string name;
    dataplane::Worker* worker;
    dataplane::switching::SwitchDatapath* datapath;
};

class SwitchTable final : public SwitchMembership, public SwitchControl {
public:
    // What the table is built on: the daemon's, all outliving it.
    struct Wiring {
        Config& config;  // the running config: add/remove keep it in step
        const Logger& log;
        io::Reactor& reactor;  // the EVPN uplinks' sync rounds
        const std::vector<std::unique_ptr<dataplane::Worker>>& workers;
        const dataplane::Placement& placement;
        // The service of the port named so (a switch's vxlan uplink), or
        // null: the port table's, which is made after this one.
        std::function<PortService*(const std::string& port)> service_of;
        // Called after each change the table made (a switch added or
        // removed, an uplink's peers): the daemon keeps its state file in
        // step.
        std::function<void()> changed;
    };
    explicit SwitchTable(Wiring wiring);
    ~SwitchTable();
    SwitchTable(const SwitchTable&) = delete;
    SwitchTable& operator=(const SwitchTable&) = delete;

    // Start-up: the config's switches, in its order.
    void open_config_switches();
    // Run time (control thread; vnetctl switch add/del, reload): add_switch
    // makes a switch with the [[switch]] keys of `config` on the worker the
    // placement rule gives it; remove_switch takes one without ports off
    // its worker (its MAC table, aging sweep and counters go with it). Both
    // throw std::invalid_argument naming what is wrong (a duplicate name,
    // a bad key, ports still on it) and then change nothing.
    void add_switch(const SwitchConfig& config);
    void remove_switch(const std::string& name) override;
    // Why a switch cannot go now (the ports on it, other than `leaving`),
    // or "" if it can.
    std::string removal_refusal(const std::string& name,
                                const std::vector<std::string>& leaving = {}) const;

    // The control methods (switch_control.cpp). add_switch parses
    // `settings` through the option table, then adds as above;
    // change_uplink_peer gives the switch's vxlan port a remote VTEP or
    // takes one away (std::invalid_argument: no such switch or uplink, a
    // bad address, a peer there already or not there). switch.list and
    // mac.list read each switch on its worker (run_sync), between rounds:
    // the datapath takes no lock.
    void add_switch(const std::string& name, const Settings& settings) override;
    void change_uplink_peer(const std::string& switch_name, const std::string& address,
                            bool add) override;
    nlohmann::json list_switches(const std::optional<std::string>& only) override;
    nlohmann::json list_macs(const std::optional<std::string>& only) override;

    SwitchId attach_to_switch(const PortConfig& config, ports::Port& port) override;
    bool detach_from_switch(const ports::Port& port) override;
    dataplane::Worker& worker_of_switch(SwitchId id) override;

    SwitchEntry* switch_named(const std::string& name);
    // Pointers into the workers, which own the switches: cleared before
    // they go (the EVPN syncs, which use them, first).
    void clear();
    // In the order they were made.
    std::vector<SwitchEntry>::iterator begin() { return switches_.begin(); }
    std::vector<SwitchEntry>::iterator end() { return switches_.end(); }

private:
    // Makes the switch on its worker: the next id and, by it, the worker.
    void open_switch(const SwitchConfig& config);
    SwitchEntry* switch_with_id(SwitchId id);
    // An EVPN uplink joined switch `s` as `member`: its MACs sync from now
    // on (control/switches/evpn/), until it leaves.
    void start_evpn_sync(SwitchEntry& s, const PortConfig& config, const VxlanSettings& vxlan,
                         ports::Port& port, uint16_t member);
    // The switch named `only`, or every switch; RpcError if none is so named.
    std::vector<SwitchEntry*> selected(const std::optional<std::string>& only);

    Wiring w_;
    // A port refers to its switch by id: a deletion moves the others in
    // this vector.
    std::vector<SwitchEntry> switches_;
    SwitchId next_switch_id_ = 0;
    // The placement rule's `connections` for switches: the cross-connects
    // of the boot config. Fixed, so a switch made later lands where the
    // rule says whatever ports were added since.
    size_t boot_connections_ = 0;
    // The EVPN uplinks' syncs, by uplink port.
    std::map<const ports::Port*, std::unique_ptr<evpn::EvpnFdbSync>> evpn_syncs_;
};

}  // namespace vnet::control
