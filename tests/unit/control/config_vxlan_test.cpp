// A switch's VXLAN uplink in the config file (docs/USAGE.md "VXLAN
// uplinks"): the keys read, the devices named from the VNI, the MTU its
// switch's guests are offered, and the exact message for each mistake.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "control/config/config.hpp"
#include "unit/control/config_file_error.hpp"

namespace vnet::control {
namespace {

using test::config_file_error;

const std::string kSwitches = "[[switch]]\nname = \"s0\"\n[[switch]]\nname = \"s1\"\n";

std::string uplink(const std::string& name, const std::string& keys) {
    return "[[port]]\nname = \"" + name + "\"\ntype = \"vxlan\"\n" + keys;
}

TEST(ConfigVxlan, an_uplinks_keys_are_read_and_its_devices_named_by_the_vni) {
    Config c;
    ASSERT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 4242\n"
                                                   "vxlan_local = \"10.0.0.1\"\n"
                                                   "vxlan_remote = [\"10.0.0.2\", \"fd00::3\"]\n"
                                                   "vxlan_port = 8472\nvxlan_dev = \"eth0\"\n"),
                                &c),
              "");
    const PortConfig* p = c.find_port("up");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->type(), PortType::vxlan);
    EXPECT_EQ(p->get<VxlanSettings>()->vni, 4242u);
    EXPECT_EQ(p->get<VxlanSettings>()->vxlan_local, "10.0.0.1");
    EXPECT_EQ(p->get<VxlanSettings>()->vxlan_remote,
              (std::vector<std::string>{"10.0.0.2", "fd00::3"}));
    EXPECT_EQ(p->get<VxlanSettings>()->vxlan_port, 8472);
    EXPECT_EQ(p->get<VxlanSettings>()->vxlan_dev, "eth0");
    EXPECT_EQ(vxlan_device_name(*p->get<VxlanSettings>()), "vxlan4242");
    EXPECT_EQ(vxlan_tap_name(*p->get<VxlanSettings>()), "vxtap4242");
}

TEST(ConfigVxlan, guests_on_the_switch_are_offered_the_tunnels_mtu) {
    Config c;
    ASSERT_EQ(config_file_error(kSwitches + uplink("up", "switch = \"s0\"\nvni = 7\n"), &c), "");
    EXPECT_EQ(c.uplink_mtu_of("s0"), std::optional<uint16_t>(1450));
    EXPECT_EQ(c.uplink_mtu_of("s1"), std::nullopt);  // no uplink: the guest's own default
    ASSERT_EQ(
        config_file_error(kSwitches + uplink("up", "switch = \"s0\"\nvni = 7\nmtu = 8950\n"), &c),
        "");
    EXPECT_EQ(c.uplink_mtu_of("s0"), std::optional<uint16_t>(8950));
}

TEST(ConfigVxlan, mistakes_are_refused_with_the_reason) {
    EXPECT_EQ(config_file_error(kSwitches + uplink("up", "switch = \"s0\"\n")),
              "port 'up': a vxlan port needs vni (1..16777215)");
    EXPECT_EQ(config_file_error(kSwitches + uplink("up", "switch = \"s0\"\nvni = 16777216\n")),
              "port 'up': vni must be 1..16777215, not '16777216'");
    EXPECT_EQ(config_file_error(kSwitches + uplink("up", "vni = 7\n")),
              "port 'up': a vxlan port is a switch's uplink: give switch");
    EXPECT_EQ(config_file_error(kSwitches + uplink("a", "switch = \"s0\"\nvni = 7\n") +
                                uplink("b", "switch = \"s0\"\nvni = 8\n")),
              "port 'b': switch 's0' has a vxlan uplink already (one per switch)");
    EXPECT_EQ(config_file_error(kSwitches + uplink("a", "switch = \"s0\"\nvni = 7\n") +
                                uplink("b", "switch = \"s1\"\nvni = 7\n")),
              "port 'b': vni 7 is another vxlan port's");
    // An EVPN uplink on the socket datapath takes its port's datagrams
    // from the namespace: no other uplink on that port and address.
    const std::string evpn_socket = "evpn = true\nvxlan_datapath = \"socket\"\n";
    EXPECT_EQ(config_file_error(kSwitches + uplink("a", "switch = \"s0\"\nvni = 7\n") +
                                uplink("b", "switch = \"s1\"\nvni = 8\n" + evpn_socket)),
              "port 'b': udp port 4789 is vxlan port 'a''s too, and an EVPN uplink on the socket "
              "datapath takes its port's datagrams from the whole network namespace: give each "
              "uplink its own vxlan_port or vxlan_local");
    EXPECT_EQ(
        config_file_error(kSwitches + uplink("a", "switch = \"s0\"\nvni = 7\n" + evpn_socket) +
                          uplink("b", "switch = \"s1\"\nvni = 8\nvxlan_local = \"10.0.0.2\"\n")),
        "port 'b': udp port 4789 is vxlan port 'a''s too, and an EVPN uplink on the socket "
        "datapath takes its port's datagrams from the whole network namespace: give each "
        "uplink its own vxlan_port or vxlan_local");
    // Another port, or two local addresses, do not meet.
    EXPECT_EQ(config_file_error(
                  kSwitches + uplink("a", "switch = \"s0\"\nvni = 7\n") +
                  uplink("b", "switch = \"s1\"\nvni = 8\nvxlan_port = 4790\n" + evpn_socket)),
              "");
    EXPECT_EQ(
        config_file_error(
            kSwitches +
            uplink("a", "switch = \"s0\"\nvni = 7\nvxlan_local = \"10.0.0.1\"\n" + evpn_socket) +
            uplink("b", "switch = \"s1\"\nvni = 8\nvxlan_local = \"10.0.0.2\"\n" + evpn_socket)),
        "");
    EXPECT_EQ(config_file_error(
                  kSwitches + uplink("up", "switch = \"s0\"\nvni = 7\nvxlan_local = \"10.0.0\"\n")),
              "port 'up': vxlan_local '10.0.0' is not an IPv4 or IPv6 address");
    EXPECT_EQ(
        config_file_error(kSwitches + uplink("up",
                                             "switch = \"s0\"\nvni = 7\n"
                                             "vxlan_remote = [\"10.0.0.2\", \"10.0.0.2\"]\n")),
        "port 'up': vxlan_remote 10.0.0.2 is given twice");
    EXPECT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 7\n"
                                                   "vxlan_remote = [\"host-b\"]\n")),
              "port 'up': vxlan_remote 'host-b' is not an IPv4 or IPv6 address");
    EXPECT_EQ(config_file_error("[[port]]\nname = \"t\"\ntype = \"tap\"\nvni = 7\n"),
              "port 't': vni is for vxlan ports");
}

TEST(ConfigVxlan, the_datapath_is_splice_unless_socket_is_asked_for) {
    Config c;
    ASSERT_EQ(config_file_error(kSwitches + uplink("up", "switch = \"s0\"\nvni = 7\n"), &c), "");
    EXPECT_EQ(c.find_port("up")->get<VxlanSettings>()->vxlan_datapath, VxlanDatapath::splice);
    ASSERT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 7\n"
                                                   "vxlan_datapath = \"socket\"\n"
                                                   "vxlan_local = \"fd00::1\"\n"
                                                   "vxlan_remote = [\"fd00::2\"]\n"),
                                &c),
              "");
    EXPECT_EQ(c.find_port("up")->get<VxlanSettings>()->vxlan_datapath, VxlanDatapath::socket);
    // EVPN on either datapath.
    ASSERT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 7\nevpn = true\n"
                                                   "vxlan_datapath = \"socket\"\n"),
                                &c),
              "");
    EXPECT_TRUE(c.find_port("up")->get<VxlanSettings>()->evpn);
    EXPECT_STREQ(to_string(VxlanDatapath::socket), "socket");
    EXPECT_STREQ(to_string(VxlanDatapath::splice), "splice");
}

TEST(ConfigVxlan, what_the_socket_datapath_cannot_do_is_refused_with_the_reason) {
    EXPECT_EQ(config_file_error(
                  kSwitches + uplink("up", "switch = \"s0\"\nvni = 7\nvxlan_datapath = \"udp\"\n")),
              "port 'up': vxlan_datapath must be splice or socket, not 'udp'");
    EXPECT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 7\n"
                                                   "vxlan_dev = \"eth0\"\n"
                                                   "vxlan_datapath = \"socket\"\n")),
              "port 'up': vxlan_dev needs vxlan_datapath splice (the socket datapath sends by the "
              "route to each peer; give vxlan_local to pick the underlay)");
    EXPECT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 7\n"
                                                   "vxlan_remote = [\"10.0.0.2\", \"fd00::3\"]\n"
                                                   "vxlan_datapath = \"socket\"\n")),
              "port 'up': vxlan_remote fd00::3 is not of vxlan_local's address family (IPv4, or "
              "none given): the socket datapath sends from one socket");
    EXPECT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 7\n"
                                                   "vxlan_local = \"fd00::1\"\n"
                                                   "vxlan_remote = [\"10.0.0.2\"]\n"
                                                   "vxlan_datapath = \"socket\"\n")),
              "port 'up': vxlan_remote 10.0.0.2 is not of vxlan_local's address family (IPv6): "
              "the socket datapath sends from one socket");
    // The splice's kernel device takes both, as before.
    EXPECT_EQ(config_file_error(kSwitches + uplink("up",
                                                   "switch = \"s0\"\nvni = 7\n"
                                                   "vxlan_dev = \"eth0\"\n"
                                                   "vxlan_datapath = \"splice\"\n")),
              "");
    EXPECT_EQ(
        config_file_error("[[port]]\nname = \"t\"\ntype = \"tap\"\nvxlan_datapath = \"socket\"\n"),
        "port 't': vxlan_datapath is for vxlan ports");
}

TEST(ConfigVxlan, the_socket_datapath_spreads_flows_over_8_source_ports_unless_told) {
    Config c;
    const std::string socket = "switch = \"s0\"\nvni = 7\nvxlan_datapath = \"socket\"\n";
    ASSERT_EQ(config_file_error(kSwitches + uplink("up", socket), &c), "");
    EXPECT_EQ(c.find_port("up")->get<VxlanSettings>()->source_ports(), 8);
    ASSERT_EQ(config_file_error(kSwitches + uplink("up", socket + "vxlan_source_ports = 1\n"), &c),
              "");
    EXPECT_EQ(c.find_port("up")->get<VxlanSettings>()->source_ports(), 1);
    ASSERT_EQ(config_file_error(kSwitches + uplink("up", socket + "vxlan_source_ports = 64\n"), &c),
              "");
    EXPECT_EQ(c.find_port("up")->get<VxlanSettings>()->source_ports(), 64);
    EXPECT_EQ(config_file_error(kSwitches + uplink("up", socket + "vxlan_source_ports = 0\n")),
              "port 'up': vxlan_source_ports must be 1..64, not '0'");
    EXPECT_EQ(config_file_error(kSwitches + uplink("up", socket + "vxlan_source_ports = 65\n")),
              "port 'up': vxlan_source_ports must be 1..64, not '65'");
    // The splice's kernel device picks its own source ports.
    EXPECT_EQ(config_file_error(kSwitches +
                                uplink("up", "switch = \"s0\"\nvni = 7\nvxlan_source_ports = 4\n")),
              "port 'up': vxlan_source_ports needs vxlan_datapath socket (the splice's kernel "
              "vxlan device picks a source port per flow itself)");
}

}  // namespace
}  // namespace vnet::control
