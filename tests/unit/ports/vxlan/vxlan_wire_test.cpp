// The VXLAN header vnetd builds and reads (ports/vxlan/vxlan_wire.hpp).
#include "ports/vxlan/vxlan_wire.hpp"

#include <gtest/gtest.h>

namespace vnet::ports {
namespace {

TEST(VxlanWire, header_sets_only_the_i_flag_and_the_vni_in_network_order) {
    const VxlanHeader h = make_vxlan_header(0x123456);
    const VxlanHeader expected{0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0};
    EXPECT_EQ(h, expected);
}

TEST(VxlanWire, vni_round_trips_across_its_24_bits) {
    for (uint32_t vni : {0u, 1u, 42u, 0x800000u, kVxlanMaxVni}) {
        const VxlanHeader h = make_vxlan_header(vni);
        EXPECT_TRUE(vxlan_vni_flag_set(h.data()));
        EXPECT_EQ(vxlan_vni(h.data()), vni);
    }
}

TEST(VxlanWire, reserved_bits_are_ignored_on_receive) {
    const VxlanHeader h{0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x2a, 0xff};
    EXPECT_TRUE(vxlan_vni_flag_set(h.data()));
    EXPECT_EQ(vxlan_vni(h.data()), 42u);
}

TEST(VxlanWire, a_header_without_the_i_flag_is_recognised) {
    const VxlanHeader h{0xf7, 0, 0, 0, 0, 0, 42, 0};
    EXPECT_FALSE(vxlan_vni_flag_set(h.data()));
}

TEST(VxlanWire, overheads_match_the_kernels_vxlan_device) {
    // The kernel's vxlan device takes MTU 1450 on a 1500 IPv4 underlay.
    EXPECT_EQ(1500 + 14 - kVxlanOverheadIpv4, 1450u + 14);
    EXPECT_EQ(kVxlanOverheadIpv6, 70u);
}

}  // namespace
}  // namespace vnet::ports
