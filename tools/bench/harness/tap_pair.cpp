#include "harness/tap_pair.hpp"

#include <unistd.h>

#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"
#include "harness/testpmd_instance.hpp"
#include "harness/vnetd_instance.hpp"

namespace vnet::bench {
namespace {

constexpr const char* kMacA = "02:00:00:00:0a:01";
constexpr const char* kMacB = "02:00:00:00:0b:02";

class VnetdPair : public PairForwarder {
public:
    VnetdPair(BenchContext& ctx, TapPairTopology& topo, const std::string& label,
              std::vector<std::string> args)
        : vnetd_(ctx, label, std::move(args), topo.host()) {
        vnetd_.wait_for_link(topo.link_a());
        vnetd_.wait_for_link(topo.link_b());
        topo.adopt_links();
    }
    nlohmann::json finish() override { return vnetd_.stop(); }
    std::string failure() override { return vnetd_.failure(); }
    pid_t pid() const override { return vnetd_.pid(); }

private:
    VnetdInstance vnetd_;
};

class ProcessPair : public PairForwarder {
public:
    ProcessPair(ChildProcess p, std::string log) : process_(std::move(p)), log_(std::move(log)) {}
    nlohmann::json finish() override {
        process_.stop(SIGTERM, 5);
        return {{"log", last_line_of(log_)}};
    }
    std::string failure() override {
        return process_.running() ? "" : process_.name() + " exited: " + last_line_of(log_);
    }

private:
    ChildProcess process_;
    std::string log_;
};

class TestpmdPair : public PairForwarder {
public:
    TestpmdPair(BenchContext& ctx, TapPairTopology& topo)
        : testpmd_(ctx,
                   testpmd_tap_to_tap(ctx, "tap2tap", topo.link_a(), topo.link_b(), topo.host())) {
        testpmd_.wait_for_log("Port statistics|Tx-pps");
        topo.adopt_links();
    }
    nlohmann::json finish() override {
        testpmd_.stop();
        return nlohmann::json::object();
    }
    std::string failure() override { return testpmd_.failure(); }
    pid_t pid() const override { return testpmd_.pid(); }

private:
    TestpmdInstance testpmd_;
};

class KernelBridge : public PairForwarder {
public:
    KernelBridge(TapPairTopology& topo, std::string bridge)
        : topo_(topo), bridge_(std::move(bridge)) {
        ip(topo.host(), {"link", "add", bridge_, "type", "bridge"});
        for (const auto& [link, ns] :
             {std::pair{topo.link_a(), topo.ns_a()}, std::pair{topo.link_b(), topo.ns_b()}}) {
            const std::string host_end = link + "h";
            ip(topo.host(), {"link", "add", link, "type", "veth", "peer", "name", host_end});
            ip(topo.host(), {"link", "set", "dev", host_end, "master", bridge_});
            link_up(topo.host(), host_end);
        }
        link_up(topo.host(), bridge_);
        topo.adopt_links();
    }
    ~KernelBridge() override {
        ip_quiet(topo_.ns_a(), {"link", "del", topo_.link_a()});
        ip_quiet(topo_.ns_b(), {"link", "del", topo_.link_b()});
        ip_quiet(topo_.host(), {"link", "del", bridge_});
    }

private:
    TapPairTopology& topo_;
    std::string bridge_;
};

}  // namespace

TapPairTopology::TapPairTopology(BenchContext& ctx)
    : host_(ctx.netns_name("host")),
      a_(ctx.netns_name("a")),
      b_(ctx.netns_name("b")),
      link_a_(ctx.ifname("a")),
      link_b_(ctx.ifname("b")),
      subnet_("10.77.0") {}

void TapPairTopology::adopt_links() {
    move_link(host(), link_a_, ns_a());
    move_link(host(), link_b_, ns_b());
    configure_link(ns_a(), link_a_, kMacA, address_a() + "/24");
    configure_link(ns_b(), link_b_, kMacB, address_b() + "/24");
}

void TapPairTopology::clear_stale_links() {
    const std::pair<std::string, std::string> places[] = {
        {ns_a(), link_a_}, {ns_b(), link_b_}, {host(), link_a_}, {host(), link_b_}};
    for (const auto& [ns, link] : places) {
        for (int i = 0; i < 150 && link_exists(ns, link); ++i) {
            sleep_for(0.02);
        }
        if (link_exists(ns, link)) {
            blog().warn("{} still in {} 3 s after its forwarder stopped: deleting it", link, ns);
            ip_quiet(ns, {"link", "del", link});
        }
    }
}

void TapPairTopology::disable_sender_tso() {
    ProcessSpec spec;
    spec.name = "ethtool";
    spec.argv = {"ethtool", "-K", link_b_, "tso", "off", "gso", "off"};
    spec.netns = ns_b();
    run_checked(spec);
}

std::unique_ptr<PairForwarder> start_vnetd_pair(BenchContext& ctx, TapPairTopology& topo,
                                                const std::string& label,
                                                const std::vector<std::string>& extra_args) {
    std::vector<std::string> args{"--tap", topo.link_a(), "--tap", topo.link_b()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    return std::make_unique<VnetdPair>(ctx, topo, label, args);
}

std::unique_ptr<PairForwarder> start_naive_pair(BenchContext& ctx, TapPairTopology& topo) {
    ProcessSpec spec;
    spec.name = "naive_forwarder";
    spec.argv = {ctx.tools().naive_forwarder, "-a", topo.link_a(), "-b", topo.link_b()};
    spec.cpu = ctx.dut_cpu();
    spec.netns = topo.host();
    spec.output_path = ctx.log_path("naive-forwarder.log");
    auto pair = std::make_unique<ProcessPair>(ChildProcess(spec), spec.output_path);
    for (int i = 0; i < 200 && !(link_exists(topo.host(), topo.link_a()) &&
                                 link_exists(topo.host(), topo.link_b()));
         ++i) {
        if (std::string why = pair->failure(); !why.empty()) {
            throw MeasureError(why);
        }
        usleep(20000);
    }
    topo.adopt_links();
    return pair;
}

std::unique_ptr<PairForwarder> start_testpmd_pair(BenchContext& ctx, TapPairTopology& topo) {
    return std::make_unique<TestpmdPair>(ctx, topo);
}

std::unique_ptr<PairForwarder> start_kernel_bridge(BenchContext& ctx, TapPairTopology& topo) {
    return std::make_unique<KernelBridge>(topo, ctx.ifname("br"));
}

}  // namespace vnet::bench
