// A vxlan uplink's own option rows (docs/USAGE.md "VXLAN uplinks"). The option table
// (control/config/option_table.hpp) composes them with every other row.
#include <array>
#include <span>

#include "control/ports/vxlan/vxlan_settings.hpp"

#include "control/config/option_rows.hpp"
#include "control/config/value_parsers.hpp"

namespace vnet::control {

namespace {

constexpr std::array kRows = {
    OptionSpec{"vni",
               OptionScope::port,
               port_type_of<VxlanSettings>(),
               "1..16777215",
               "the uplink's VXLAN network identifier (devices `vxlan<VNI>` and `vxtap<VNI>`)",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VxlanSettings>(p, "vni").vni =
                       static_cast<uint32_t>(parse_uint("vni", t, 1, 0xffffff));
               },
               [](const Config&, const PortConfig* p) {
                   return settings_or_default<VxlanSettings>(p).vni == 0
                              ? std::string()
                              : number(settings_or_default<VxlanSettings>(p).vni);
               }},
    OptionSpec{"vxlan_local",
               OptionScope::port,
               port_type_of<VxlanSettings>(),
               "IP",
               "the tunnel's source address on this host (none: the route's)",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VxlanSettings>(p, "vxlan_local").vxlan_local = t;
               },
               [](const Config&, const PortConfig* p) {
                   return text_or_none(settings_or_default<VxlanSettings>(p).vxlan_local);
               }},
    OptionSpec{"vxlan_remote",
               OptionScope::port,
               port_type_of<VxlanSettings>(),
               "IP,...",
               "the other hosts' tunnel addresses: floods go to each, learned MACs to one "
               "(vnetctl switch uplink peer add/del changes them at run time)",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   std::vector<std::string>& remote =
                       settings_for<VxlanSettings>(p, "vxlan_remote").vxlan_remote;
                   remote.clear();
                   for_each_item(t,
                                 [&remote](std::string_view item) { remote.emplace_back(item); });
               },
               [](const Config&, const PortConfig* p) {
                   return join(settings_or_default<VxlanSettings>(p).vxlan_remote,
                               [](const std::string& r) { return r; });
               }},
    VNET_KIND_BOOL(VxlanSettings, evpn,
                   "BGP EVPN through FRR: no static remotes; the uplink's devices sit in a "
                   "bridge `vxbr<VNI>` and the switch's MACs are kept in step with its FDB"),
    OptionSpec{"vxlan_port",
               OptionScope::port,
               port_type_of<VxlanSettings>(),
               "N",
               "the UDP destination port (IANA's 4789; Linux's own default is 8472)",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VxlanSettings>(p, "vxlan_port").vxlan_port =
                       static_cast<uint16_t>(parse_uint("vxlan_port", t, 1, 65535));
               },
               [](const Config&, const PortConfig* p) {
                   return number(settings_or_default<VxlanSettings>(p).vxlan_port);
               }},
    OptionSpec{"vxlan_dev",
               OptionScope::port,
               port_type_of<VxlanSettings>(),
               "IFNAME",
               "the underlay device the tunnel leaves by (none: the route's)",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VxlanSettings>(p, "vxlan_dev").vxlan_dev = t;
               },
               [](const Config&, const PortConfig* p) {
                   return text_or_none(settings_or_default<VxlanSettings>(p).vxlan_dev);
               }},
    OptionSpec{"vxlan_datapath",
               OptionScope::port,
               port_type_of<VxlanSettings>(),
               "splice|socket",
               "`splice`: a kernel vxlan device spliced by tc to a tap vnetd serves "
               "(vxlan_dev); `socket`: vnetd encapsulates on its own UDP socket, a burst one "
               "UDP_SEGMENT send (far less kernel CPU per frame); both take static peers or EVPN",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VxlanSettings>(p, "vxlan_datapath").vxlan_datapath =
                       parse_vxlan_datapath(t);
               },
               [](const Config&, const PortConfig* p) {
                   return std::string(
                       to_string(settings_or_default<VxlanSettings>(p).vxlan_datapath));
               }},
    OptionSpec{"vxlan_source_ports",
               OptionScope::port,
               port_type_of<VxlanSettings>(),
               "1..64",
               "the socket datapath: the UDP source ports datagrams leave from, each inner flow "
               "from one picked by its hash (RFC 7348 entropy, so that ECMP and RSS spread the "
               "flows); 1: one port, dstport's",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VxlanSettings>(p, "vxlan_source_ports").vxlan_source_ports =
                       static_cast<uint16_t>(
                           parse_uint("vxlan_source_ports", t, 1, kMaxVxlanSourcePorts));
               },
               [](const Config&, const PortConfig* p) {
                   return number(settings_or_default<VxlanSettings>(p).source_ports());
               }},
};

}  // namespace

std::span<const OptionSpec> VxlanSettings::options() {
    return kRows;
}

}  // namespace vnet::control
