// EvpnFdbSync: keeps one switch's MAC table and its EVPN uplink's bridge
// FDB in step (the rules: evpn_fdb_plan.hpp). It runs on the control
// thread, a round every kEvpnSyncIntervalMs on the reactor's timer:
//  1. the switch's MACs in the uplink's VLAN, read on the switch's worker
//     between two of its rounds (Worker::run_sync, as mac.list reads them:
//     the datapath takes no lock and learns as it always does, with no
//     event, queue or log per packet);
//  2. the bridge's FDB over rtnetlink (ports/vxlan/evpn_fdb.hpp);
//  3. the plan; the static entries added and removed in the kernel; the
//     remote MACs put behind the uplink (or forgotten) in the switch, again
//     on its worker;
//  4. on the socket datapath, where no kernel device carries the tunnel,
//     zebra's remote MACs and flood list handed to the uplink's port
//     (VxlanSocketPort::set_forwarding, on the worker) when they changed.
// A round costs a walk of the MAC table's slots on the worker and one FDB
// dump; at 5 rounds a second a MAC is in the bridge (and with zebra) at
// most ~200 ms after the switch learned it. A failed netlink call is
// logged (once until it works again) and tried again next round.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "control/switches/evpn/evpn_fdb_plan.hpp"
#include "dataplane/switch/switch_datapath.hpp"
#include "dataplane/worker.hpp"
#include "io/reactor.hpp"
#include "ports/vxlan/evpn_fdb.hpp"
#include "ports/vxlan/vxlan_socket_port.hpp"

namespace vnet::control::evpn {

inline constexpr unsigned kEvpnSyncIntervalMs = 200;

struct EvpnUplink {
    std::string port;    // the uplink's port name (for the log)
    std::string bridge;  // vxbr<VNI>
    std::string tap;     // vxtap<VNI>
    std::string vxlan;   // vxlan<VNI>
    uint16_t member;     // the uplink's member id on the switch
    uint16_t vlan;       // the VLAN the uplink carries untagged: the VNI's
    // The socket datapath's port, which forwards by zebra's entries itself
    // (null on the splice, whose kernel device does).
    ports::VxlanSocketPort* socket = nullptr;
};

class EvpnFdbSync {
public:
    // Starts the rounds (the first at once). Throws PortSetupError when a
    // device is missing or no rtnetlink socket can be had.
    EvpnFdbSync(io::Reactor& reactor, const Logger& log, dataplane::Worker& worker,
                dataplane::switching::SwitchDatapath& datapath, EvpnUplink uplink);
    // Stops the rounds. The kernel's entries go with the bridge.
    ~EvpnFdbSync();
    EvpnFdbSync(const EvpnFdbSync&) = delete;
    EvpnFdbSync& operator=(const EvpnFdbSync&) = delete;

    // One round, now (the timer's; tests call it).
    void run_round();

private:
    void schedule_next();
    void read_switch(uint64_t& now);
    void apply_to_kernel(const EvpnFdbPlan& plan);
    void apply_to_switch(const EvpnFdbPlan& plan);
    // Step 4: the kernel view's remotes (those with a VTEP) and flood list
    // to the socket port, if they differ from what it was last given.
    void forward_on_socket(const ports::EvpnFdbView& kernel);
    // Logs a round's failure once until a round works again.
    void failed(const std::string& what);

    io::Reactor& reactor_;
    Logger log_;
    dataplane::Worker& worker_;
    dataplane::switching::SwitchDatapath& datapath_;
    EvpnUplink uplink_;
    ports::EvpnFdb fdb_;
    EvpnFdbPlanner planner_;
    std::vector<SwitchMac> macs_;  // reserved for the whole table: the worker does not allocate
    uint64_t last_round_ns_ = 0;
    io::Reactor::TimerId timer_ = 0;
    bool timer_armed_ = false;
    std::string last_failure_;
    // What the socket port was last given (none yet: the first round gives
    // it the table, empty or not, and so makes it stop learning).
    std::optional<std::pair<std::set<std::string>, std::map<MacAddress, std::string>>>
        socket_forwarding_;
};

}  // namespace vnet::control::evpn
