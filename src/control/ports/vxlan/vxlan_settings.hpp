// A vxlan port's own [[port]] keys: a switch's uplink to other hosts
// (ports/vxlan/vxlan_uplink.hpp, docs/USAGE.md "VXLAN uplinks"). The
// fields are named as the keys are. The kernel device is `vxlan<VNI>`, its
// tap `vxtap<VNI>`.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vnet::control {

struct Config;
struct OptionSpec;
struct PortConfig;

// A VXLAN uplink's MTU unless told: a 1500-byte IPv4 underlay less the 50
// bytes of outer Ethernet, IP, UDP and VXLAN headers (the kernel's default).
inline constexpr uint16_t kDefaultVxlanMtu = 1450;
// The socket datapath's UDP source ports unless told (vxlan_source_ports;
// ports::kVxlanDefaultSourcePorts), and the most.
inline constexpr uint16_t kDefaultVxlanSourcePorts = 8;
inline constexpr uint16_t kMaxVxlanSourcePorts = 64;

// How an uplink's frames reach the underlay (docs/USAGE.md "VXLAN uplinks"):
//  splice: a kernel vxlan device spliced by tc to a tap vnetd serves
//          (ports/vxlan/vxlan_uplink.hpp); EVPN and an underlay device work;
//  socket: vnetd encapsulates itself on one UDP socket, a burst to one VTEP
//          one UDP_SEGMENT send (ports/vxlan/vxlan_socket_port.hpp): no
//          kernel device carries frames, far less kernel CPU per frame;
//          with EVPN the devices stay as zebra's table (evpn_table.hpp).
enum class VxlanDatapath : uint8_t { splice, socket };
const char* to_string(VxlanDatapath datapath);
// "splice" or "socket"; throws std::invalid_argument naming the key.
VxlanDatapath parse_vxlan_datapath(std::string_view text);

struct VxlanSettings {
    static constexpr std::string_view kind = "vxlan";
    // The kind's rows of the option table (vxlan_options.cpp).
    static std::span<const OptionSpec> options();

    uint32_t vni = 0;
    std::string vxlan_local;  // the tunnel's source address; empty: the route's
    std::string vxlan_dev;    // the underlay device; empty: the route's
    uint16_t vxlan_port = 4789;
    std::vector<std::string> vxlan_remote;  // the remote VTEPs
    // BGP EVPN through FRR: no static remotes; the devices are laid out for
    // FRR's zebra (a bridge `vxbr<VNI>` holding both) and the switch's MACs
    // are kept in step with the bridge's FDB (control/switches/evpn/).
    bool evpn = false;
    VxlanDatapath vxlan_datapath = VxlanDatapath::splice;
    // The socket datapath: how many UDP source ports the inner flows are
    // spread over (RFC 7348 §5's entropy), 1..64; unset:
    // kDefaultVxlanSourcePorts. The splice's kernel device picks its own
    // (from the ephemeral range), so it refuses the key.
    std::optional<uint16_t> vxlan_source_ports;
    uint16_t source_ports() const { return vxlan_source_ports.value_or(kDefaultVxlanSourcePorts); }

    // A vxlan port is its switch's uplink: one per switch (vnetctl names an
    // uplink by its switch) and one per VNI (the kernel refuses a second
    // vxlan device with the same VNI and port). Throws
    // std::invalid_argument naming the port.
    void validate(const PortConfig& port, const Config& config) const;
    // The tunnel's MTU (the port's `mtu`, else kDefaultVxlanMtu): what the
    // VM ports on its switch offer their guests unless told.
    std::optional<uint16_t> uplink_mtu(const PortConfig& port) const;
};

// The kernel devices: `vxlan<VNI>` and its tap `vxtap<VNI>`.
std::string vxlan_device_name(const VxlanSettings& vxlan);
std::string vxlan_tap_name(const VxlanSettings& vxlan);
// An EVPN uplink's bridge (FRR's zebra maps the VNI to it): `vxbr<VNI>`.
std::string vxlan_bridge_name(const VxlanSettings& vxlan);

}  // namespace vnet::control
