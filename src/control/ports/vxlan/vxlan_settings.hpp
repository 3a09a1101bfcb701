// A vxlan port's own [[port]] keys: a switch's uplink to other hosts
// (ports/vxlan/vxlan_uplink.hpp, docs/USAGE.md "VXLAN uplinks"). The
// fields are named as the keys are. The kernel device is `vxlan<VNI>`, its
// tap `vxtap<VNI>`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vnet::control {

struct VxlanSettings {
    static constexpr std::string_view kind = "vxlan";

    uint32_t vni = 0;
    std::string vxlan_local;  // the tunnel's source address; empty: the route's
    std::string vxlan_dev;    // the underlay device; empty: the route's
    uint16_t vxlan_port = 4789;
    std::vector<std::string> vxlan_remote;  // the remote VTEPs
};

}  // namespace vnet::control
