// Which VLANs a switch port carries and how (IEEE 802.1Q): at most one
// VLAN untagged (an access port's VLAN, or a trunk's native VLAN) and any
// number tagged (a trunk's allowed list). A port configured with neither is
// an access port of VLAN 1, so a switch without VLAN keys is one plain
// learning bridge.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>

namespace vnet::dataplane::switching {

inline constexpr uint16_t kDefaultVlan = 1;
// 802.1Q: VID 0 is a priority tag (no VLAN), 4095 is reserved.
inline constexpr uint16_t kMinVlan = 1;
inline constexpr uint16_t kMaxVlan = 4094;
inline constexpr uint16_t kVlanIdMask = 0x0fff;

enum class Egress : uint8_t { none, untagged, tagged };

struct VlanMembership {
    std::optional<uint16_t> untagged = kDefaultVlan;
    std::bitset<4096> tagged;

    // ingress_vlan's answer for a frame the port does not carry.
    static constexpr uint16_t kNotCarried = UINT16_MAX;
    // The VLAN a frame arriving here belongs to: `vid` is its tag's VLAN id,
    // 0 when it came untagged (a priority tag, VID 0, counts as untagged).
    // kNotCarried: the port does not carry it (dropped as vlan_not_allowed).
    // A plain value, not an optional: GCC 12 returns std::optional<uint16_t>
    // through the stack, a store-forwarding stall per packet.
    uint16_t ingress_vlan(uint16_t vid) const {
        if (vid == 0) {
            return untagged.value_or(kNotCarried);
        }
        if (vid <= kMaxVlan && (tagged.test(vid) || untagged == vid)) {
            return vid;
        }
        return kNotCarried;
    }
    // How a frame of `vlan` leaves here: untagged on the port's untagged
    // VLAN, tagged on an allowed one, not at all otherwise.
    Egress egress(uint16_t vlan) const {
        if (untagged == vlan) {
            return Egress::untagged;
        }
        return vlan <= kMaxVlan && tagged.test(vlan) ? Egress::tagged : Egress::none;
    }
};

}  // namespace vnet::dataplane::switching
