#include "harness/ovs_dpdk.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"
#include "harness/rate_meter.hpp"
#include "harness/socket_wait.hpp"

namespace vnet::bench {
namespace {

constexpr const char* kVswitchd = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk";
constexpr const char* kSchema = "/usr/share/openvswitch/vswitch.ovsschema";
constexpr const char* kBridge = "br0";
// DPDK's memory in OVS: mbufs for a few vhost-user ports, MB per NUMA node.
constexpr const char* kSocketMemMb = "256";

std::string cpu_mask(int cpu) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", 1ull << cpu);
    return buf;
}

}  // namespace

std::string OvsDpdk::missing() {
    if (!find_program(kVswitchd)) {
        return std::string(kVswitchd) + " not found (Debian package openvswitch-switch-dpdk)";
    }
    for (const char* tool : {"ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl"}) {
        if (!find_program(tool)) {
            return std::string(tool) + " not found (Debian package openvswitch-switch)";
        }
    }
    return "";
}

OvsDpdk::OvsDpdk(BenchContext& ctx, const OvsDpdkSpec& spec) : ctx_(ctx) {
    if (std::string why = missing(); !why.empty()) {
        throw MeasureError(why);
    }
    dir_ = ctx.log_path("ovs-" + spec.label);
    huge_dir_ = dir_ + "/hugepages";
    db_socket_ = dir_ + "/db.sock";
    vswitchd_log_ = dir_ + "/ovs-vswitchd.log";
    mkdir(dir_.c_str(), 0755);
    mkdir(huge_dir_.c_str(), 0755);
    // A hugetlbfs of its own: DPDK in OVS maps its memory from files it
    // creates there, and nothing another test uses is touched.
    if (mount("nodev", huge_dir_.c_str(), "hugetlbfs", 0, "pagesize=2M") != 0) {
        throw MeasureError("mount hugetlbfs on " + huge_dir_ + ": " + std::strerror(errno));
    }
    huge_mounted_ = true;
    try {
        // A log directory given again with --log-dir still holds the last
        // run's database, and ovsdb-tool refuses to create over it.
        const std::string database = dir_ + "/conf.db";
        unlink(database.c_str());
        ProcessSpec create;
        create.name = "ovsdb-tool";
        create.argv = {"ovsdb-tool", "create", database, kSchema};
        run_checked(create);

        ProcessSpec db;
        db.name = "ovsdb-server " + spec.label;
        db.argv = {"ovsdb-server", database, "--remote=punix:" + db_socket_,
                   "--unixctl=" + dir_ + "/ovsdb-server.ctl",
                   "--log-file=" + dir_ + "/ovsdb-server.log"};
        db.cpu = ctx.load_cpu();
        db.output_path = dir_ + "/ovsdb-server.out";
        ovsdb_ = ChildProcess(db);
        ovsdb_started_ = true;
        wait_for_socket(
            db_socket_, 10,
            [&]() -> std::string {
                return ovsdb_.running() ? ""
                                        : "ovsdb-server exited: " + last_line_of(db.output_path);
            },
            "ovsdb-server");
        vsctl({"--no-wait", "init"});
        std::vector<std::string> config = {
            "--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
            "other_config:pmd-cpu-mask=" + cpu_mask(ctx.dut_cpu()),
            "other_config:dpdk-lcore-mask=" + cpu_mask(ctx.load_cpu()),
            "other_config:dpdk-hugepage-dir=" + huge_dir_,
            std::string("other_config:dpdk-socket-mem=") + kSocketMemMb,
            "other_config:dpdk-extra=--no-pci",
            // vhost-user sockets in our run directory (OVS_RUNDIR below).
            "other_config:vhost-sock-dir=."};
        if (spec.userspace_tso) {
            config.push_back("other_config:userspace-tso-enable=true");
        }
        vsctl(config);

        ProcessSpec vs;
        vs.name = "ovs-vswitchd-dpdk " + spec.label;
        // OVS_RUNDIR: where vswitchd puts the bridge's and the vhost-user
        // ports' sockets. Its threads start on the load CPU; the PMD thread
        // moves itself to pmd-cpu-mask's CPU.
        vs.argv = {"env",
                   "OVS_RUNDIR=" + dir_,
                   "OVS_LOGDIR=" + dir_,
                   kVswitchd,
                   "unix:" + db_socket_,
                   "--unixctl=" + dir_ + "/ovs-vswitchd.ctl",
                   "--log-file=" + vswitchd_log_,
                   "-vconsole:off"};
        vs.cpu = ctx.load_cpu();
        vs.output_path = dir_ + "/ovs-vswitchd.out";
        vswitchd_ = ChildProcess(vs);
        vswitchd_started_ = true;
        // add-br waits for vswitchd to apply it: DPDK's EAL is up by then.
        vsctl({"--timeout=60", "add-br", kBridge, "--", "set", "bridge", kBridge,
               "datapath_type=netdev"},
              70);
        if (std::string why = failure(); !why.empty()) {
            throw MeasureError(why);
        }
    } catch (...) {
        stop();
        throw;
    }
}

OvsDpdk::~OvsDpdk() {
    stop();
}

std::string OvsDpdk::vsctl(const std::vector<std::string>& args, double timeout_s) {
    ProcessSpec p;
    p.name = "ovs-vsctl";
    p.argv = {"ovs-vsctl", "--db=unix:" + db_socket_};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    const CommandResult r = run_command(p, timeout_s);
    if (!r.ok()) {
        std::string why = r.output.empty() ? "exit " + std::to_string(r.status) : r.output;
        const std::string vswitchd = failure();
        throw MeasureError("ovs-vsctl " + args.front() + ": " + why +
                           (vswitchd.empty() ? "" : " (" + vswitchd + ")"));
    }
    return r.output;
}

void OvsDpdk::ofctl(const std::vector<std::string>& args) {
    ProcessSpec p;
    p.name = "ovs-ofctl";
    p.argv = {"ovs-ofctl"};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    run_checked(p);
}

std::string OvsDpdk::add_vhost_port(const std::string& name, int ofport) {
    vsctl({"--timeout=30", "add-port", kBridge, name, "--", "set", "Interface", name,
           "type=dpdkvhostuser", "ofport_request=" + std::to_string(ofport)});
    const std::string path = dir_ + "/" + name;
    wait_for_socket(
        path, 10, [this] { return failure(); }, "OVS",
        [this] { return last_line_of(vswitchd_log_); });
    return path;
}

void OvsDpdk::add_vhost_client_port(const std::string& name, int ofport,
                                    const std::string& server_path) {
    vsctl({"--timeout=30", "add-port", kBridge, name, "--", "set", "Interface", name,
           "type=dpdkvhostuserclient", "options:vhost-server-path=" + server_path,
           "ofport_request=" + std::to_string(ofport)});
}

void OvsDpdk::del_port(const std::string& name) {
    vsctl({"--timeout=30", "del-port", kBridge, name});
}

void OvsDpdk::use_normal_action() {
    const std::string bridge = "unix:" + dir_ + "/" + kBridge + ".mgmt";
    ofctl({"del-flows", bridge});
    ofctl({"add-flow", bridge, "actions=NORMAL"});
}

void OvsDpdk::use_cross_connect(int a, int b) {
    const std::string bridge = "unix:" + dir_ + "/" + kBridge + ".mgmt";
    ofctl({"del-flows", bridge});
    ofctl({"add-flow", bridge,
           "in_port=" + std::to_string(a) + ",actions=output:" + std::to_string(b)});
    ofctl({"add-flow", bridge,
           "in_port=" + std::to_string(b) + ",actions=output:" + std::to_string(a)});
}

std::string OvsDpdk::interface_statistics(const std::string& name) {
    return vsctl({"get", "Interface", name, "statistics"});
}

std::string OvsDpdk::failure() {
    if (stopping_) {
        return "";
    }
    if (vswitchd_started_ && !vswitchd_.running()) {
        return "ovs-vswitchd exited: " + last_line_of(vswitchd_log_);
    }
    if (ovsdb_started_ && !ovsdb_.running()) {
        return "ovsdb-server exited: " + last_line_of(dir_ + "/ovsdb-server.log");
    }
    return "";
}

void OvsDpdk::stop() {
    // vswitchd first (it closes the vhost-user ports and DPDK's memory),
    // then the database; then the hugetlbfs, empty again.
    stopping_ = true;
    vswitchd_.stop(SIGTERM, 10);
    ovsdb_.stop(SIGTERM, 5);
    if (huge_mounted_) {
        if (umount2(huge_dir_.c_str(), MNT_DETACH) != 0) {
            blog().warn("umount {}: {}", huge_dir_, std::strerror(errno));
        }
        huge_mounted_ = false;
    }
}

}  // namespace vnet::bench
