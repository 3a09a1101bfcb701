// Network namespaces and links, set up with iproute2 (`ip`) so that every
// step is a command in the log that can be pasted into a shell.
//
// A namespace made here has IPv6 off: its stack then sends nothing of its
// own (no MLD report, DAD probe or router solicitation) through a tap that
// lives in it, so every frame a tap counts is the benchmark's.
#pragma once

#include <string>
#include <vector>

namespace vnet::bench {

class Netns {
public:
    explicit Netns(std::string name);  // ip netns add; throws ProcessError
    ~Netns();                          // ip netns del
    Netns(const Netns&) = delete;
    Netns& operator=(const Netns&) = delete;

    const std::string& name() const { return name_; }

private:
    std::string name_;
};

// `ip [-n NS] ARGS...`; throws ProcessError on failure.
void ip(const std::string& netns, const std::vector<std::string>& args);
// The same, returning false instead of throwing (for teardown).
bool ip_quiet(const std::string& netns, const std::vector<std::string>& args);

bool link_exists(const std::string& netns, const std::string& ifname);
// Polls until the link exists; throws ProcessError after timeout_s.
void wait_for_link(const std::string& netns, const std::string& ifname, double timeout_s = 15);
void move_link(const std::string& from_ns, const std::string& ifname, const std::string& to_ns);
void link_up(const std::string& netns, const std::string& ifname);
// Down, set the MAC (a tap refuses a MAC change while up), address, up.
void configure_link(const std::string& netns, const std::string& ifname, const std::string& mac,
                    const std::string& cidr);

// Attaches an XDP object in native mode (`ip link set dev X xdpdrv obj F sec S`).
void attach_xdp_native(const std::string& netns, const std::string& ifname,
                       const std::string& object, const std::string& section = "xdp");

// Runs the calling thread inside a namespace until destroyed (setns on this
// thread only; the rest of the process stays where it was).
class NetnsThreadScope {
public:
    explicit NetnsThreadScope(const std::string& netns);  // throws std::runtime_error
    ~NetnsThreadScope();
    NetnsThreadScope(const NetnsThreadScope&) = delete;
    NetnsThreadScope& operator=(const NetnsThreadScope&) = delete;

private:
    int original_ = -1;
};

}  // namespace vnet::bench
