// The tap <-> tap topology of seed002 and seed000 (the 2022 series'
// [iperf server] <-> tap <-> forwarder <-> tap <-> [iperf client], with the
// guest side replaced by a second tap):
//
//   netns a: link A 10.<x>.0.1/24 (iperf3 server)
//   netns host: the forwarder under test (vnetd, naive forwarder, testpmd)
//               or the kernel's veth + bridge
//   netns b: link B 10.<x>.0.2/24 (iperf3 client, the sender)
//
// A forwarder creates both taps in `host`; they are then moved into a and b,
// given fixed MACs (so ARP entries stay valid from one forwarder to the
// next) and addresses. A forwarder's taps vanish with the process.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"
#include "harness/netns.hpp"

namespace vnet::bench {

class TapPairTopology {
public:
    explicit TapPairTopology(BenchContext& ctx);

    const std::string& host() const { return host_.name(); }
    const std::string& ns_a() const { return a_.name(); }
    const std::string& ns_b() const { return b_.name(); }
    const std::string& link_a() const { return link_a_; }
    const std::string& link_b() const { return link_b_; }
    std::string address_a() const { return subnet_ + ".1"; }
    std::string address_b() const { return subnet_ + ".2"; }

    // Moves link_a/link_b from host into a/b and configures them.
    void adopt_links();
    // Before a forwarder starts: waits for the links of the previous one
    // to go (a tap outlives its process briefly: io_uring releases its
    // files from a workqueue) and deletes what is left after 3 s, so the
    // names and addresses are free again.
    void clear_stale_links();
    // The sender (b) hands the forwarder MSS-sized frames, not GSO frames.
    void disable_sender_tso();

private:
    Netns host_;
    Netns a_;
    Netns b_;
    std::string link_a_;
    std::string link_b_;
    std::string subnet_;
};

// A running forwarder between link_a and link_b; stops on destruction.
class PairForwarder {
public:
    virtual ~PairForwarder() = default;
    // Stops it and returns what it reports (vnetd: its counters).
    virtual nlohmann::json finish() { return nlohmann::json::object(); }
    // "" while it runs, else why not.
    virtual std::string failure() { return ""; }
    // The forwarding process (for its CPU time), -1 when the kernel forwards.
    virtual pid_t pid() const { return -1; }
};

std::unique_ptr<PairForwarder> start_vnetd_pair(BenchContext& ctx, TapPairTopology& topo,
                                                const std::string& label,
                                                const std::vector<std::string>& extra_args);
std::unique_ptr<PairForwarder> start_naive_pair(BenchContext& ctx, TapPairTopology& topo);
std::unique_ptr<PairForwarder> start_testpmd_pair(BenchContext& ctx, TapPairTopology& topo);
std::unique_ptr<PairForwarder> start_kernel_bridge(BenchContext& ctx, TapPairTopology& topo);

}  // namespace vnet::bench
