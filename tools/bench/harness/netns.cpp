#include "harness/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"
#include "harness/process.hpp"

namespace vnet::bench {
namespace {

ProcessSpec ip_spec(const std::string& netns, const std::vector<std::string>& args) {
    ProcessSpec spec;
    spec.name = "ip";
    spec.argv = {"ip"};
    if (!netns.empty()) {
        spec.argv.insert(spec.argv.end(), {"-n", netns});
    }
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    return spec;
}

}  // namespace

Netns::Netns(std::string name) : name_(std::move(name)) {
    ip("", {"netns", "add", name_});
    try {
        ProcessSpec sysctl;
        sysctl.name = "sysctl";
        sysctl.netns = name_;
        sysctl.argv = {"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                       "net.ipv6.conf.default.disable_ipv6=1"};
        run_checked(sysctl);
        ip(name_, {"link", "set", "lo", "up"});
    } catch (...) {
        ip_quiet("", {"netns", "del", name_});
        throw;
    }
}

Netns::~Netns() {
    try {
        ip_quiet("", {"netns", "del", name_});
    } catch (...) {
        // Interrupted during teardown: the name is in the log.
    }
}

void ip(const std::string& netns, const std::vector<std::string>& args) {
    run_checked(ip_spec(netns, args), 15);
}

bool ip_quiet(const std::string& netns, const std::vector<std::string>& args) {
    ProcessSpec spec = ip_spec(netns, args);
    spec.interruptible = false;
    return run_command(spec, 15).ok();
}

bool link_exists(const std::string& netns, const std::string& ifname) {
    return ip_quiet(netns, {"link", "show", "dev", ifname});
}

void wait_for_link(const std::string& netns, const std::string& ifname, double timeout_s) {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    while (!link_exists(netns, ifname)) {
        if (Clock::now() > end) {
            throw ProcessError("link " + ifname + " did not appear in netns " +
                               (netns.empty() ? "(default)" : netns));
        }
        sleep_for(0.05);
    }
}

void move_link(const std::string& from_ns, const std::string& ifname, const std::string& to_ns) {
    ip(from_ns, {"link", "set", "dev", ifname, "netns", to_ns});
}

void link_up(const std::string& netns, const std::string& ifname) {
    ip(netns, {"link", "set", "dev", ifname, "up"});
}

void configure_link(const std::string& netns, const std::string& ifname, const std::string& mac,
                    const std::string& cidr) {
    ip(netns, {"link", "set", "dev", ifname, "down"});
    if (!mac.empty()) {
        ip(netns, {"link", "set", "dev", ifname, "address", mac});
    }
    if (!cidr.empty()) {
        ip(netns, {"address", "add", cidr, "dev", ifname});
    }
    ip(netns, {"link", "set", "dev", ifname, "up"});
}

void attach_xdp_native(const std::string& netns, const std::string& ifname,
                       const std::string& object, const std::string& section) {
    ip(netns, {"link", "set", "dev", ifname, "xdpdrv", "obj", object, "sec", section});
}

NetnsThreadScope::NetnsThreadScope(const std::string& netns) {
    original_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (original_ < 0) {
        throw std::runtime_error(std::string("open /proc/thread-self/ns/net: ") +
                                 std::strerror(errno));
    }
    const std::string path = "/run/netns/" + netns;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
        const std::string why = std::strerror(errno);
        if (fd >= 0) {
            close(fd);
        }
        close(original_);
        throw std::runtime_error("setns " + path + ": " + why);
    }
    close(fd);
}

NetnsThreadScope::~NetnsThreadScope() {
    if (setns(original_, CLONE_NEWNET) < 0) {
        blog().error("setns back to the original netns: {}", std::strerror(errno));
    }
    close(original_);
}

}  // namespace vnet::bench
