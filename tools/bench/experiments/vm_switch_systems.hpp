// The switches of the VM <-> VM experiments, behind one face: each serves
// N vhost-user ports (it listens, the guests connect) on the CPU under test.
//   vnetd_switch         vnetd, one [[switch]] with every port on it
//   vnetd_cross_connect  vnetd, [[connect]] of ports 0 and 1
//   ovs_normal           OVS-DPDK netdev bridge, the NORMAL action (learning)
//   ovs_cross_connect    OVS-DPDK, OpenFlow in_port=1 -> 2 and back
//   testpmd_io           DPDK testpmd, net_vhost ports in io forwarding
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"

namespace vnet::bench {

enum class SwitchKind {
    vnetd_switch,
    vnetd_cross_connect,
    ovs_normal,
    ovs_cross_connect,
    testpmd_io
};

struct SwitchSystemSpec {
    SwitchKind kind = SwitchKind::vnetd_switch;
    int ports = 2;
    std::string vnetd_mode = "adaptive";  // vnetd --mode
    uint32_t mac_table_size = 0;          // vnetd [[switch]]; 0: its default
    bool userspace_tso = false;           // OVS other_config:userspace-tso-enable
    bool metrics = false;                 // vnetd --metrics-address (worker_busy_seconds)
    // OVS: dpdkvhostuserclient ports (OVS connects to the guests, which
    // listen), the only kind OVS 3.1 offers TSO to.
    bool ovs_client_ports = false;
};

class SwitchSystem {
public:
    virtual ~SwitchSystem() = default;
    // The socket of port `i` (0-based): a guest connects to it.
    virtual std::string socket_path(int i) const = 0;
    // "" while it runs, else why not.
    virtual std::string failure() = 0;
    // Stops it; what it counted (vnetd's stats and switch counters, OVS's
    // interface statistics), for the row's JSON.
    virtual nlohmann::json finish() = 0;
    // The process whose CPU time is the switch's.
    virtual pid_t pid() const = 0;
    // Do the guests listen (vnet-pktgen --server) and the switch connect?
    virtual bool guests_listen() const { return false; }
    // Does it learn MACs (then a receiver announces its own first)?
    virtual bool learns() const = 0;
    // vnetd's worker time in rounds that moved packets (its Prometheus
    // counter vnetd_worker_busy_seconds_total), with `metrics`; nullopt for
    // the peers, whose polling threads are always busy.
    virtual std::optional<double> worker_busy_seconds() { return std::nullopt; }
    // A port added / removed at run time (vnetctl port add/del; ovs-vsctl
    // add-port/del-port): returns once the command did, the socket's path.
    // Throws MeasureError where the system cannot.
    virtual std::string add_port(const std::string& name) = 0;
    virtual void del_port(const std::string& name) = 0;
};

// Starts the system with every port's socket listening; throws
// MeasureError when it cannot.
std::unique_ptr<SwitchSystem> start_switch_system(BenchContext& ctx, const std::string& label,
                                                  const SwitchSystemSpec& spec);

// The receiving guests' MACs: port i's guest is 02:00:00:00:01:<i>.
std::string guest_mac(int port);

}  // namespace vnet::bench
