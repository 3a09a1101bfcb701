// Which entries of an EVPN uplink's bridge FDB the sync reads as vnetd's
// static entries, which as zebra's remote MACs and which as its flood list
// (ports/vxlan/evpn_fdb.hpp), as the kernel reports them for
// `bridge fdb show br vxbr<VNI>`.
#include "ports/vxlan/evpn_fdb.hpp"

#include <gtest/gtest.h>
#include <linux/neighbour.h>

namespace vnet::ports {
namespace {

constexpr unsigned kBridge = 7;
constexpr unsigned kVxlan = 8;
constexpr unsigned kTap = 9;
const packet::MacAddress kVm{0x02, 0, 0, 0, 0, 0x0a};
const packet::MacAddress kRemote{0x02, 0, 0, 0, 0, 0x0c};

FdbEntry entry(const packet::MacAddress& mac, unsigned ifindex, uint16_t state, uint8_t flags,
               unsigned master, std::string dst = "") {
    FdbEntry e;
    e.mac = mac;
    e.ifindex = ifindex;
    e.state = state;
    e.flags = flags;
    e.master = master;
    e.dst = std::move(dst);
    return e;
}

EvpnFdbView classify(std::initializer_list<FdbEntry> entries) {
    EvpnFdbView view;
    for (const FdbEntry& e : entries) {
        classify_fdb_entry(e, kTap, kVxlan, view);
    }
    return view;
}

TEST(EvpnFdbClassify, vnetds_static_entries_are_the_bridges_static_ones_on_the_tap) {
    const EvpnFdbView v = classify({
        entry(kVm, kTap, NUD_NOARP, 0, kBridge),                            // `master static`: ours
        entry({0x02, 0, 0, 0, 0, 0x0b}, kTap, NUD_PERMANENT, 0, kBridge),   // the tap's address
        entry({0x33, 0x33, 0, 0, 0, 1}, kTap, NUD_PERMANENT, NTF_SELF, 0),  // its multicast list
        entry({0x02, 0, 0, 0, 0, 0x0d}, kTap, NUD_REACHABLE, 0, kBridge),   // learned: not ours
    });
    EXPECT_EQ(v.statics, (std::set<packet::MacAddress>{kVm}));
    EXPECT_TRUE(v.remotes.empty());
    EXPECT_TRUE(v.flood.empty());
}

TEST(EvpnFdbClassify, remote_macs_are_zebras_entries_on_the_vxlan_device_with_their_vtep) {
    // Zebra's pair for one MAC, in either order, and a bridge-only one.
    const packet::MacAddress only_master{0x02, 0, 0, 0, 0, 0x0e};
    const EvpnFdbView v = classify({
        entry(kRemote, kVxlan, NUD_REACHABLE, NTF_EXT_LEARNED, kBridge),
        entry(kRemote, kVxlan, NUD_REACHABLE, NTF_SELF | NTF_EXT_LEARNED, 0, "10.0.0.2"),
        entry(kVm, kVxlan, NUD_NOARP, NTF_SELF | NTF_EXT_LEARNED, 0, "fd00::3"),
        entry(kVm, kVxlan, NUD_NOARP, NTF_EXT_LEARNED, kBridge),
        entry(only_master, kVxlan, NUD_REACHABLE, NTF_EXT_LEARNED, kBridge),
    });
    EXPECT_EQ(v.remotes, (std::map<packet::MacAddress, std::string>{
                             {kRemote, "10.0.0.2"}, {kVm, "fd00::3"}, {only_master, ""}}));
    EXPECT_TRUE(v.statics.empty());
    EXPECT_TRUE(v.flood.empty());
}

TEST(EvpnFdbClassify, the_flood_list_is_the_all_zero_entries_of_the_vxlan_device_with_a_vtep) {
    const EvpnFdbView v = classify({
        entry({}, kVxlan, NUD_PERMANENT | NUD_NOARP, NTF_SELF, 0, "10.0.0.2"),  // zebra's type-3
        entry({}, kVxlan, NUD_REACHABLE, NTF_SELF, 0, "10.0.0.3"),              // any NUD state
        entry({}, kVxlan, NUD_NOARP, NTF_SELF, 0, "fd00::4"),
        entry({}, kVxlan, NUD_NOARP, NTF_SELF, 0, "10.0.0.2"),  // again: one VTEP once
        entry({}, kVxlan, NUD_NOARP, NTF_SELF, 0),              // no VTEP: floods nowhere
        entry({}, kVxlan, NUD_NOARP, 0, kBridge, "10.0.0.5"),   // the bridge's entry
        entry({}, kTap, NUD_NOARP, NTF_SELF, 0, "10.0.0.6"),    // another device
        entry({}, 42, NUD_NOARP, NTF_SELF, 0, "10.0.0.7"),
    });
    EXPECT_EQ(v.flood, (std::set<std::string>{"10.0.0.2", "10.0.0.3", "fd00::4"}));
    EXPECT_TRUE(v.statics.empty());
    EXPECT_TRUE(v.remotes.empty());
}

TEST(EvpnFdbClassify, group_addresses_own_addresses_and_other_ports_are_left_out) {
    const EvpnFdbView v = classify({
        entry({0x01, 0x00, 0x5e, 0, 0, 1}, kVxlan, NUD_NOARP, NTF_SELF, 0, "10.0.0.2"),
        entry({0x02, 0, 0, 0, 0, 0x0f}, kVxlan, NUD_PERMANENT, 0, kBridge),  // its own address
        entry(kVm, 42, NUD_NOARP, 0, kBridge),                               // another port
    });
    EXPECT_TRUE(v.statics.empty());
    EXPECT_TRUE(v.remotes.empty());
    EXPECT_TRUE(v.flood.empty());
}

}  // namespace
}  // namespace vnet::ports
