// Open vSwitch with DPDK (Debian openvswitch-switch-dpdk) as the peer
// switch: a private ovsdb-server and ovs-vswitchd-dpdk in a directory of
// their own (database, run directory, logs, a private hugetlbfs mount),
// started as children and stopped by PID; one netdev bridge whose ports are
// dpdkvhostuser (OVS listens, the guest connects). The recipe is
// reference/peer-baselines.md's: dpdk-init=true, the PMD thread alone on the
// CPU under test (pmd-cpu-mask), the main thread and DPDK's lcore on the
// load CPU, --no-pci.
#pragma once

#include <string>
#include <vector>

#include "harness/bench_context.hpp"
#include "harness/process.hpp"

namespace vnet::bench {

struct OvsDpdkSpec {
    std::string label;
    // other_config:userspace-tso-enable: offer TSO to the guests and pass
    // GSO frames through (off by default in OVS 3.1).
    bool userspace_tso = false;
};

class OvsDpdk {
public:
    // Starts both daemons and the bridge; throws MeasureError when OVS-DPDK
    // is not installed or does not come up (its log's last line).
    OvsDpdk(BenchContext& ctx, const OvsDpdkSpec& spec);
    ~OvsDpdk();
    OvsDpdk(const OvsDpdk&) = delete;
    OvsDpdk& operator=(const OvsDpdk&) = delete;

    // Adds a dpdkvhostuser port as OpenFlow port `ofport` and waits for its
    // socket; returns the socket's path.
    std::string add_vhost_port(const std::string& name, int ofport);
    // A dpdkvhostuserclient port: OVS connects (and reconnects) to the
    // guest's socket at `server_path`. OVS 3.1 offers TSO to these only: its
    // server ports use linear buffers, which makes DPDK withdraw TSO.
    void add_vhost_client_port(const std::string& name, int ofport, const std::string& server_path);
    void del_port(const std::string& name);
    // The learning switch: the bridge's default flow, NORMAL.
    void use_normal_action();
    // An OpenFlow cross-connect of two ports (in_port=a -> b and back).
    void use_cross_connect(int ofport_a, int ofport_b);
    std::string failure();
    // vswitchd's PID (its PMD thread is the switch's CPU).
    pid_t vswitchd_pid() const { return vswitchd_.pid(); }
    // Interface statistics as `ovs-vsctl get Interface NAME statistics`.
    std::string interface_statistics(const std::string& name);
    void stop();
    const std::string& log_path() const { return vswitchd_log_; }

    // Is OVS-DPDK installed (ovs-vswitchd-dpdk, ovsdb-server, ovs-vsctl)?
    static std::string missing();

private:
    std::string vsctl(const std::vector<std::string>& args, double timeout_s = 30);
    void ofctl(const std::vector<std::string>& args);

    BenchContext& ctx_;
    std::string dir_;
    std::string huge_dir_;
    bool huge_mounted_ = false;
    std::string db_socket_;
    std::string vswitchd_log_;
    ChildProcess ovsdb_;
    ChildProcess vswitchd_;
    bool ovsdb_started_ = false;
    bool vswitchd_started_ = false;
    bool stopping_ = false;
};

}  // namespace vnet::bench
