// What every experiment needs: the options, the tools it runs (and which
// are missing), the CPU plan, vnetd's flags, and unique names for
// namespaces, links and log files (all carry this run's PID).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/bench_options.hpp"

namespace vnet::bench {

// The flags `vnetd --help` lists: a row whose flag is not there yet is
// reported as "n/a (flag missing: --x)" instead of failing the run.
class VnetdFlags {
public:
    static VnetdFlags probe(const std::string& vnetd);
    // The first "--flag" of args that vnetd does not know, if any.
    std::optional<std::string> missing(const std::vector<std::string>& args) const;
    bool has(const std::string& flag) const { return flags_.count(flag) != 0; }
    const std::set<std::string>& all() const { return flags_; }

private:
    std::set<std::string> flags_;
};

struct Tools {
    std::string vnetd;
    std::string pktgen;
    std::string tap_write_limit;
    std::string naive_forwarder;
    std::string xdp_drop;      // build/bpf/xdp_drop.bpf.o
    std::string xdp_redirect;  // build/bpf/xdp_redirect.bpf.o
    std::optional<std::string> testpmd;
    std::optional<std::string> iperf3;
    std::optional<std::string> ethtool;
};

class BenchContext {
public:
    BenchContext(BenchOptions options, std::string self_path);

    const BenchOptions& options() const { return options_; }
    const Tools& tools() const { return tools_; }
    const VnetdFlags& vnetd_flags() const { return vnetd_flags_; }
    bool quick() const { return options_.mode == RunMode::quick; }
    int repeats() const { return repeats_; }
    double point_seconds() const { return seconds_; }
    double warmup_seconds() const { return quick() ? 0.5 : 1.0; }
    int dut_cpu() const { return dut_cpu_; }
    int load_cpu() const { return load_cpu_; }
    const std::string& build_dir() const { return build_dir_; }
    const std::string& log_dir() const { return log_dir_; }
    const std::string& run_id() const { return run_id_; }

    // "vb<pid><tag>", at most 15 characters (IFNAMSIZ - 1).
    std::string ifname(const std::string& tag) const;
    // "vb<pid><tag><n>": a name never used before in this run. A tap
    // outlives its process for a moment (io_uring releases registered files
    // from a workqueue), so reusing a name can meet EBUSY.
    std::string fresh_ifname(const std::string& tag);
    // "vnb-<pid>-<tag>".
    std::string netns_name(const std::string& tag) const;
    // A fresh file name in the log directory: "<nn>-<name>".
    std::string log_path(const std::string& name);
    // "<log dir>/<label>.sock", removed if a former point left it behind.
    std::string fresh_socket_path(const std::string& label) const;
    // Why a required file is missing, if it is (checked at start-up).
    std::vector<std::string> missing_tools() const;
    std::string pinning_text() const;

private:
    BenchOptions options_;
    std::string build_dir_;
    std::string log_dir_;
    std::string run_id_;
    Tools tools_;
    VnetdFlags vnetd_flags_;
    int repeats_ = 1;
    double seconds_ = 1;
    int dut_cpu_ = 1;
    int load_cpu_ = 0;
    int log_counter_ = 0;
    int ifname_counter_ = 0;
};

}  // namespace vnet::bench
