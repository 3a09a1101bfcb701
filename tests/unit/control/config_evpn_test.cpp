// A VXLAN uplink in EVPN mode in the config file and as vnetctl gives it
// (docs/USAGE.md "EVPN mode"): the key read, the bridge named from the
// VNI, and the exact message for each combination EVPN refuses.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "control/config/config.hpp"
#include "unit/control/config_file_error.hpp"

namespace vnet::control {
namespace {

using test::config_file_error;

const std::string kSwitch = "[[switch]]\nname = \"s0\"\n";

std::string uplink(const std::string& keys) {
    return kSwitch + "[[port]]\nname = \"up\"\ntype = \"vxlan\"\nswitch = \"s0\"\nvni = 100\n" +
           keys;
}

TEST(ConfigEvpn, the_key_is_read_and_the_bridge_named_by_the_vni) {
    Config c;
    ASSERT_EQ(config_file_error(uplink("vxlan_local = \"10.0.0.1\"\nevpn = true\n"), &c), "");
    const PortConfig* p = c.find_port("up");
    ASSERT_NE(p, nullptr);
    const VxlanSettings* vx = p->get<VxlanSettings>();
    ASSERT_NE(vx, nullptr);
    EXPECT_TRUE(vx->evpn);
    EXPECT_EQ(vxlan_bridge_name(*vx), "vxbr100");
    EXPECT_EQ(vxlan_device_name(*vx), "vxlan100");
    EXPECT_EQ(vxlan_tap_name(*vx), "vxtap100");
    ASSERT_EQ(config_file_error(uplink(""), &c), "");
    EXPECT_FALSE(c.find_port("up")->get<VxlanSettings>()->evpn);  // static mode unless asked
}

TEST(ConfigEvpn, static_remotes_a_trunk_and_other_kinds_are_refused) {
    EXPECT_EQ(config_file_error(uplink("evpn = true\nvxlan_remote = [\"10.0.0.2\"]\n")),
              "port 'up': evpn takes the remote VTEPs from the control plane (FRR): give no "
              "vxlan_remote (--remote)");
    EXPECT_EQ(config_file_error(uplink("evpn = true\ntrunk = [10, 20]\n")),
              "port 'up': evpn carries one VLAN, the uplink's untagged one: give no trunk");
    EXPECT_EQ(config_file_error("[[port]]\nname = \"t\"\ntype = \"tap\"\nevpn = true\n"),
              "port 't': evpn is for vxlan ports");
}

// What vnetctl switch uplink add ... --evpn --remote sends: the same check
// through port_from_settings and validate.
TEST(ConfigEvpn, vnetctl_settings_meet_the_same_refusal) {
    Config c;
    ASSERT_EQ(config_file_error(kSwitch, &c), "");
    c.ports.push_back(port_from_settings(
        "uplink-s0", "vxlan",
        {{"switch", "s0"}, {"vni", "100"}, {"evpn", "on"}, {"vxlan_remote", "10.0.0.2"}}, c));
    EXPECT_TRUE(c.ports.back().get<VxlanSettings>()->evpn);
    try {
        c.validate();
        ADD_FAILURE() << "evpn with a remote was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(),
                     "port 'uplink-s0': evpn takes the remote VTEPs from the control plane (FRR): "
                     "give no vxlan_remote (--remote)");
    }
}

}  // namespace
}  // namespace vnet::control
