// plan_reload (SIGHUP, vnetctl reload): what a changed config file adds,
// removes and changes on a running vnetd, and the exact refusal for what it
// cannot change.
#include "control/config/config_diff.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vnet::control {
namespace {

PortConfig vm(const std::string& name) {
    PortConfig p;
    p.name = name;
    p.settings = VhostUserSettings{};
    p.get<VhostUserSettings>()->socket_path = "/run/vnetd/" + name + ".sock";
    return p;
}

PortConfig tap(const std::string& name) {
    PortConfig p;
    p.name = name;
    p.settings = TapSettings{};
    p.get<TapSettings>()->ifname = name;
    return p;
}

Config boot() {
    Config c;
    c.ports = {vm("vm0"), tap("t0")};
    c.connections = {{"vm0", "t0"}};
    return c;
}

std::vector<std::string> added_names(const ConfigPlan& plan) {
    std::vector<std::string> names;
    for (const auto& [port, peer] : plan.add) {
        names.push_back(port.name + (peer.empty() ? "" : "->" + peer));
    }
    return names;
}

TEST(PlanReload, the_same_file_changes_nothing) {
    const ConfigPlan plan = plan_reload(boot(), boot());
    EXPECT_TRUE(plan.empty());
    EXPECT_TRUE(plan.refusals.empty());
}

TEST(PlanReload, a_new_cross_connected_pair_is_added_second_port_connecting_to_the_first) {
    Config after = boot();
    after.ports.push_back(vm("vm1"));
    after.ports.push_back(tap("t1"));
    after.connections.emplace_back("vm1", "t1");
    const ConfigPlan plan = plan_reload(boot(), after);
    EXPECT_TRUE(plan.refusals.empty());
    EXPECT_TRUE(plan.remove.empty());
    EXPECT_EQ(added_names(plan), (std::vector<std::string>{"vm1", "t1->vm1"}));
}

TEST(PlanReload, a_port_gone_from_the_file_is_removed_and_its_peer_stays) {
    Config after = boot();
    after.ports = {tap("t0")};
    after.connections.clear();
    const ConfigPlan plan = plan_reload(boot(), after);
    EXPECT_TRUE(plan.refusals.empty());
    EXPECT_EQ(plan.remove, (std::vector<std::string>{"vm0"}));
    EXPECT_TRUE(plan.add.empty());
}

TEST(PlanReload, a_new_port_may_connect_to_a_port_that_stays) {
    Config before = boot();
    before.ports.push_back(tap("t1"));
    Config after = before;
    after.ports.push_back(vm("vm1"));
    after.connections.emplace_back("t1", "vm1");
    const ConfigPlan plan = plan_reload(before, after);
    EXPECT_TRUE(plan.refusals.empty());
    EXPECT_EQ(added_names(plan), (std::vector<std::string>{"vm1->t1"}));
}

TEST(PlanReload, a_port_whose_keys_changed_is_refused_naming_the_keys) {
    Config after = boot();
    after.ports[0].get<VhostUserSettings>()->socket_path = "/run/vnetd/other.sock";
    after.ports[0].mtu = 9000;
    const ConfigPlan plan = plan_reload(boot(), after);
    ASSERT_EQ(plan.refusals.size(), 1u);
    EXPECT_EQ(plan.refusals[0],
              "port 'vm0' changed (socket_path, mtu): remove it from the file and reload, then "
              "add it back");
}

// A VXLAN uplink's datapath is one of its keys: moving an uplink between
// the splice and the socket is a remove and an add, not a reload.
TEST(PlanReload, a_vxlan_uplinks_datapath_changed_is_refused_naming_the_key) {
    PortConfig up;
    up.name = "uplink-s0";
    up.switch_name = "s0";
    up.settings = VxlanSettings{};
    up.get<VxlanSettings>()->vni = 100;
    up.get<VxlanSettings>()->evpn = true;
    Config before;
    before.ports = {up};
    Config after = before;
    after.ports[0].get<VxlanSettings>()->vxlan_datapath = VxlanDatapath::socket;
    const ConfigPlan plan = plan_reload(before, after);
    ASSERT_EQ(plan.refusals.size(), 1u);
    EXPECT_EQ(plan.refusals[0],
              "port 'uplink-s0' changed (vxlan_datapath): remove it from the file and reload, "
              "then add it back");
}

// The socket datapath's source ports are sockets the port opened at its
// start: a change is a remove and an add, as the datapath's is.
TEST(PlanReload, a_vxlan_uplinks_source_ports_changed_is_refused_naming_the_key) {
    PortConfig up;
    up.name = "uplink-s0";
    up.switch_name = "s0";
    up.settings = VxlanSettings{};
    up.get<VxlanSettings>()->vni = 100;
    up.get<VxlanSettings>()->vxlan_datapath = VxlanDatapath::socket;
    Config before;
    before.ports = {up};
    Config after = before;
    after.ports[0].get<VxlanSettings>()->vxlan_source_ports = kDefaultVxlanSourcePorts;
    EXPECT_TRUE(plan_reload(before, after).refusals.empty());  // the default, said
    after.ports[0].get<VxlanSettings>()->vxlan_source_ports = 16;
    const ConfigPlan plan = plan_reload(before, after);
    ASSERT_EQ(plan.refusals.size(), 1u);
    EXPECT_EQ(plan.refusals[0],
              "port 'uplink-s0' changed (vxlan_source_ports): remove it from the file and reload, "
              "then add it back");
}

TEST(PlanReload, rewiring_ports_that_stay_is_refused) {
    Config before = boot();
    before.ports.push_back(tap("t1"));
    Config after = before;
    after.connections = {{"vm0", "t1"}};
    const ConfigPlan plan = plan_reload(before, after);
    ASSERT_EQ(plan.refusals.size(), 3u);
    EXPECT_EQ(plan.refusals[0],
              "port 'vm0' changed cross-connect ('t0' -> 't1'): remove it from the file and "
              "reload, then add it back");
}

TEST(PlanReload, run_time_options_are_applied_and_the_others_refused) {
    Config after = boot();
    after.datapath.busy_poll_us = 50;
    after.log_level = "debug";
    after.datapath.tx_batch = 32;
    const ConfigPlan plan = plan_reload(boot(), after);
    EXPECT_EQ(plan.options, (std::vector<std::pair<std::string, std::string>>{
                                {"busy_poll_us", "50"}, {"log_level", "debug"}}));
    ASSERT_EQ(plan.refusals.size(), 1u);
    EXPECT_EQ(plan.refusals[0], "tx_batch changed (64 -> 32): it takes a restart");
}

SwitchConfig a_switch(const std::string& name) {
    SwitchConfig s;
    s.name = name;
    return s;
}

PortConfig on_switch(PortConfig p, const std::string& switch_name) {
    p.switch_name = switch_name;
    return p;
}

TEST(PlanReload, a_new_switch_is_added_before_the_new_ports_on_it) {
    Config after = boot();
    after.switches = {a_switch("s1")};
    after.switches[0].mac_aging_s = 60;
    after.ports.push_back(on_switch(vm("vm1"), "s1"));
    const ConfigPlan plan = plan_reload(boot(), after);
    EXPECT_TRUE(plan.refusals.empty());
    ASSERT_EQ(plan.add_switches.size(), 1u);
    EXPECT_EQ(plan.add_switches[0].name, "s1");
    EXPECT_EQ(plan.add_switches[0].mac_aging_s, 60u);
    EXPECT_TRUE(plan.remove_switches.empty());
    EXPECT_EQ(added_names(plan), (std::vector<std::string>{"vm1"}));
}

TEST(PlanReload, a_switch_gone_from_the_file_is_removed_with_its_ports) {
    Config before = boot();
    before.switches = {a_switch("s0"), a_switch("s1")};
    before.ports.push_back(on_switch(vm("vm1"), "s1"));
    Config after = boot();
    after.switches = {a_switch("s0")};
    const ConfigPlan plan = plan_reload(before, after);
    EXPECT_TRUE(plan.refusals.empty());
    EXPECT_EQ(plan.remove, (std::vector<std::string>{"vm1"}));
    EXPECT_EQ(plan.remove_switches, (std::vector<std::string>{"s1"}));
    EXPECT_TRUE(plan.add_switches.empty());
    EXPECT_FALSE(plan.empty());
}

TEST(PlanReload, a_switch_whose_keys_changed_is_refused_naming_the_keys) {
    Config before = boot();
    before.switches = {a_switch("s0"), a_switch("s1")};
    Config after = before;
    after.switches[0].mac_table_size = 1024;
    after.switches[0].destination_hold_us = 500;
    const ConfigPlan plan = plan_reload(before, after);
    ASSERT_EQ(plan.refusals.size(), 1u);
    EXPECT_EQ(plan.refusals[0],
              "switch 's0' changed (mac_table_size, destination_hold_us): remove it and its "
              "ports from the file and reload, then add them back");
    EXPECT_TRUE(plan.add_switches.empty());
    EXPECT_TRUE(plan.remove_switches.empty());
}

TEST(PlanReload, the_same_switches_change_nothing_and_their_keys_are_no_daemon_options) {
    Config before = boot();
    before.switches = {a_switch("s0")};
    before.switches[0].mac_aging_s = 60;
    const ConfigPlan same = plan_reload(before, before);
    EXPECT_TRUE(same.empty());
    EXPECT_TRUE(same.refusals.empty());
    // A new last switch with other keys is no change of "mac_aging_s".
    Config after = before;
    after.switches.push_back(a_switch("s1"));
    const ConfigPlan plan = plan_reload(before, after);
    EXPECT_TRUE(plan.refusals.empty());
    EXPECT_TRUE(plan.options.empty());
    ASSERT_EQ(plan.add_switches.size(), 1u);
    EXPECT_EQ(plan.add_switches[0].name, "s1");
}

}  // namespace
}  // namespace vnet::control
