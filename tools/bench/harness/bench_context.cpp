#include "harness/bench_context.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include "harness/process.hpp"

namespace vnet::bench {
namespace {

std::string parent_dir(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

bool file_exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

}  // namespace

VnetdFlags VnetdFlags::probe(const std::string& vnetd) {
    VnetdFlags f;
    ProcessSpec spec;
    spec.name = "vnetd --help";
    spec.argv = {vnetd, "--help"};
    const CommandResult r = run_command(spec, 10);
    static const std::regex flag(R"((^|[\s,])(--[a-z][a-z0-9-]*))");
    for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), flag);
         it != std::sregex_iterator(); ++it) {
        f.flags_.insert((*it)[2].str());
    }
    return f;
}

std::optional<std::string> VnetdFlags::missing(const std::vector<std::string>& args) const {
    for (const std::string& a : args) {
        if (a.rfind("--", 0) == 0 && !has(a.substr(0, a.find('=')))) {
            return a;
        }
    }
    return std::nullopt;
}

BenchContext::BenchContext(BenchOptions options, std::string self_path)
    : options_(std::move(options)), run_id_(std::to_string(getpid())) {
    char resolved[4096];
    if (realpath(self_path.c_str(), resolved) != nullptr) {
        self_path = resolved;
    }
    // This binary is <build>/tools/bench/vnet-bench.
    build_dir_ = options_.build_dir.empty() ? parent_dir(parent_dir(parent_dir(self_path)))
                                            : options_.build_dir;
    // Absolute: vnetd takes only absolute paths (its stats file is in here).
    log_dir_ = options_.log_dir.empty() ? "/tmp/vnet-bench-" + run_id_
                                        : std::filesystem::absolute(options_.log_dir).string();
    mkdir(log_dir_.c_str(), 0755);
    if (!file_exists(log_dir_)) {
        throw std::runtime_error("cannot create the log directory " + log_dir_);
    }

    tools_.vnetd = build_dir_ + "/apps/vnetd";
    tools_.pktgen = build_dir_ + "/apps/vnet-pktgen";
    tools_.tap_write_limit = build_dir_ + "/tools/bench/tap_write_limit";
    tools_.naive_forwarder = build_dir_ + "/tools/bench/naive_forwarder";
    tools_.xdp_drop = build_dir_ + "/bpf/xdp_drop.bpf.o";
    tools_.xdp_redirect = build_dir_ + "/bpf/xdp_redirect.bpf.o";
    tools_.testpmd = find_program("dpdk-testpmd");
    tools_.iperf3 = find_program("iperf3");
    tools_.ethtool = find_program("ethtool");
    if (file_exists(tools_.vnetd)) {
        vnetd_flags_ = VnetdFlags::probe(tools_.vnetd);
    }

    const bool quick_mode = options_.mode == RunMode::quick;
    repeats_ = options_.repeat > 0 ? options_.repeat : (quick_mode ? 1 : 3);
    seconds_ = options_.seconds > 0 ? options_.seconds : (quick_mode ? 1.0 : 5.0);
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    dut_cpu_ = options_.dut_cpu >= 0 ? options_.dut_cpu : static_cast<int>(ncpu > 1 ? ncpu - 1 : 0);
    load_cpu_ = options_.load_cpu >= 0 ? options_.load_cpu : 0;
}

std::string BenchContext::ifname(const std::string& tag) const {
    std::string name = "vb" + run_id_ + tag;
    return name.size() > 15 ? name.substr(name.size() - 15) : name;
}

std::string BenchContext::fresh_ifname(const std::string& tag) {
    return ifname(tag + std::to_string(++ifname_counter_));
}

std::string BenchContext::netns_name(const std::string& tag) const {
    return "vnb-" + run_id_ + "-" + tag;
}

std::string BenchContext::log_path(const std::string& name) {
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "%03d-", ++log_counter_);
    return log_dir_ + "/" + prefix + name;
}

std::string BenchContext::fresh_socket_path(const std::string& label) const {
    const std::string path = log_dir_ + "/" + label + ".sock";
    unlink(path.c_str());
    return path;
}

std::vector<std::string> BenchContext::missing_tools() const {
    std::vector<std::string> missing;
    for (const std::string& p : {tools_.vnetd, tools_.pktgen, tools_.tap_write_limit,
                                 tools_.naive_forwarder, tools_.xdp_drop, tools_.xdp_redirect}) {
        if (!file_exists(p)) {
            missing.push_back(p);
        }
    }
    return missing;
}

std::string BenchContext::pinning_text() const {
    return "vnetd / the forwarder under test on CPU " + std::to_string(dut_cpu_) +
           " (DPDK peers: forwarding lcore there, main lcore on CPU " + std::to_string(load_cpu_) +
           "); traffic source and sink (vnet-pktgen, testpmd virtio-user, iperf3, tap readers) on "
           "CPU " +
           std::to_string(load_cpu_);
}

}  // namespace vnet::bench
