// The EVPN sync's decisions (control/switches/evpn/evpn_fdb_plan.hpp), round
// by round: local MACs become static entries and leave with the switch's
// entry, remote MACs are pinned behind the uplink while zebra keeps them
// and forgotten when it withdraws them, and a MAC that moves between hosts
// ends on the side that saw it last.
#include "control/switches/evpn/evpn_fdb_plan.hpp"

#include <gtest/gtest.h>

namespace vnet::control::evpn {
namespace {

constexpr uint16_t kUplink = 0;
constexpr uint16_t kVm = 1;
constexpr uint16_t kPod = 2;
constexpr uint64_t kRound = 200000000;  // 200 ms
const MacAddress kA{0x02, 0, 0, 0, 0, 0x0a};
const MacAddress kB{0x02, 0, 0, 0, 0, 0x0b};
const MacAddress kR{0x02, 0, 0, 0, 0, 0x0c};

std::vector<MacAddress> macs(std::initializer_list<MacAddress> l) {
    return l;
}

bool pinned(const EvpnFdbPlan& p, const MacAddress& mac, uint16_t seen_on) {
    for (const Pin& pin : p.pin) {
        if (pin.mac == mac) {
            return pin.seen_on == seen_on;
        }
    }
    return false;
}

TEST(EvpnFdbPlan, local_macs_get_a_static_entry_and_lose_it_with_the_switchs_entry) {
    EvpnFdbPlanner planner(kUplink);
    KernelFdb kernel;
    EvpnFdbPlan p = planner.plan({{kA, kVm, 0}, {kB, kPod, kRound * 3}}, kernel, kRound);
    EXPECT_EQ(p.add_static, macs({kA, kB}));
    EXPECT_TRUE(p.remove_static.empty());
    EXPECT_TRUE(p.pin.empty());
    kernel.statics = {kA, kB};
    // Nothing changed: nothing to do.
    EXPECT_TRUE(planner.plan({{kA, kVm, kRound}, {kB, kPod, kRound}}, kernel, kRound).empty());
    // B aged out, was flushed or its port went: its entry goes.
    p = planner.plan({{kA, kVm, 0}}, kernel, kRound);
    EXPECT_TRUE(p.add_static.empty());
    EXPECT_EQ(p.remove_static, macs({kB}));
}

TEST(EvpnFdbPlan, what_the_switch_learned_behind_the_uplink_is_not_advertised) {
    EvpnFdbPlanner planner(kUplink);
    EXPECT_TRUE(planner.plan({{kR, kUplink, 0}}, {}, kRound).empty());
}

TEST(EvpnFdbPlan, remote_macs_are_pinned_every_round_and_forgotten_when_withdrawn) {
    EvpnFdbPlanner planner(kUplink);
    KernelFdb kernel;
    kernel.remotes = {{kR, "10.0.0.2"}};
    EvpnFdbPlan p = planner.plan({}, kernel, kRound);
    EXPECT_TRUE(pinned(p, kR, kNoMember));
    EXPECT_TRUE(p.add_static.empty());
    // Again the next round (it must not age out in the switch), now seen there.
    p = planner.plan({{kR, kUplink, kRound}}, kernel, kRound);
    EXPECT_TRUE(pinned(p, kR, kUplink));
    EXPECT_TRUE(p.unpin.empty());
    // Zebra withdrew it.
    p = planner.plan({{kR, kUplink, kRound}}, {}, kRound);
    EXPECT_TRUE(p.pin.empty());
    EXPECT_EQ(p.unpin, macs({kR}));
    // Once.
    EXPECT_TRUE(planner.plan({}, {}, kRound).empty());
}

TEST(EvpnFdbPlan, a_mac_that_arrives_here_replaces_the_remote_one) {
    EvpnFdbPlanner planner(kUplink);
    KernelFdb kernel;
    kernel.remotes = {{kA, "10.0.0.2"}};
    EXPECT_TRUE(pinned(planner.plan({}, kernel, kRound), kA, kNoMember));
    // The migrated VM's RARP re-learned it on a local port: the static entry
    // (which replaces zebra's in the bridge) and no pin, though zebra still
    // has its remote entry until its mobility sequence settles.
    EvpnFdbPlan p = planner.plan({{kA, kVm, 1000}}, kernel, kRound);
    EXPECT_EQ(p.add_static, macs({kA}));
    EXPECT_TRUE(p.pin.empty());
    EXPECT_TRUE(p.unpin.empty());
    kernel.statics = {kA};
    // It stays local while zebra's entry lingers, however quiet the VM is.
    p = planner.plan({{kA, kVm, kRound * 10}}, kernel, kRound);
    EXPECT_TRUE(p.empty());
}

TEST(EvpnFdbPlan, a_mac_zebra_moves_away_while_quiet_here_goes_behind_the_uplink) {
    EvpnFdbPlanner planner(kUplink);
    KernelFdb kernel;
    kernel.statics = {kA};
    EXPECT_TRUE(planner.plan({{kA, kVm, 0}}, kernel, kRound).empty());
    // The VM migrated to another host; zebra installs it there. Not seen
    // here since the last round: it moved.
    kernel.remotes = {{kA, "10.0.0.3"}};
    EvpnFdbPlan p = planner.plan({{kA, kVm, kRound + 5}}, kernel, kRound);
    EXPECT_TRUE(pinned(p, kA, kVm));
    EXPECT_EQ(p.remove_static, macs({kA}));
    EXPECT_TRUE(p.add_static.empty());
}

TEST(EvpnFdbPlan, a_mac_still_sending_here_stays_local_when_zebra_installs_it) {
    EvpnFdbPlanner planner(kUplink);
    KernelFdb kernel;
    kernel.statics = {kA};
    kernel.remotes = {{kA, "10.0.0.3"}};
    EvpnFdbPlan p = planner.plan({{kA, kVm, kRound / 2}}, kernel, kRound);
    EXPECT_TRUE(p.empty());  // static kept, not pinned
    // A later move to another VTEP while it is quiet here is news again.
    kernel.remotes = {{kA, "10.0.0.4"}};
    p = planner.plan({{kA, kVm, kRound * 2}}, kernel, kRound);
    EXPECT_TRUE(pinned(p, kA, kVm));
    EXPECT_EQ(p.remove_static, macs({kA}));
}

}  // namespace
}  // namespace vnet::control::evpn
