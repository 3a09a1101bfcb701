#include "control/ports/vxlan/vxlan_settings.hpp"

#include <arpa/inet.h>

#include <set>
#include <stdexcept>

#include "control/config/config.hpp"

namespace vnet::control {

namespace {

bool is_ip_address(const std::string& text) {
    in6_addr a{};
    return ::inet_pton(AF_INET, text.c_str(), &a) == 1 ||
           ::inet_pton(AF_INET6, text.c_str(), &a) == 1;
}

// The socket datapath is vnetd's own UDP socket: the kernel's VXLAN
// features it has no counterpart for yet are refused rather than ignored.
void validate_socket_datapath(const VxlanSettings& vx, const std::string& where) {
    if (!vx.vxlan_dev.empty()) {
        throw std::invalid_argument(where +
                                    "vxlan_dev needs vxlan_datapath splice (the socket datapath "
                                    "sends by the route to each peer; give vxlan_local to pick "
                                    "the underlay)");
    }
    // One socket, one address family: what it binds is what it sends to.
    const bool local_v6 = vx.vxlan_local.find(':') != std::string::npos;
    for (const std::string& r : vx.vxlan_remote) {
        if ((r.find(':') != std::string::npos) != local_v6) {
            throw std::invalid_argument(where + "vxlan_remote " + r +
                                        " is not of vxlan_local's address family (" +
                                        (local_v6 ? "IPv6" : "IPv4, or none given") +
                                        "): the socket datapath sends from one socket");
        }
    }
}

// An EVPN uplink on the socket datapath steers every datagram to its UDP
// port (on its local address, or any) to its own socket, whatever VNI it
// carries (UdpPortSteering): another uplink on that port would receive
// nothing, silently. The kernel's vxlan devices share a port by VNI;
// static socket uplinks cannot bind a port already bound, and say so.
bool steals_its_port(const VxlanSettings& vx) {
    return vx.evpn && vx.vxlan_datapath == VxlanDatapath::socket;
}

}  // namespace

const char* to_string(VxlanDatapath datapath) {
    return datapath == VxlanDatapath::socket ? "socket" : "splice";
}

VxlanDatapath parse_vxlan_datapath(std::string_view text) {
    if (text == "splice") {
        return VxlanDatapath::splice;
    }
    if (text == "socket") {
        return VxlanDatapath::socket;
    }
    throw std::invalid_argument("vxlan_datapath must be splice or socket, not '" +
                                std::string(text) + "'");
}

void VxlanSettings::validate(const PortConfig& port, const Config& config) const {
    const std::string where = "port '" + port.name + "': ";
    if (vni == 0) {
        throw std::invalid_argument(where + "a vxlan port needs vni (1..16777215)");
    }
    if (port.switch_name.empty()) {
        throw std::invalid_argument(where + "a vxlan port is a switch's uplink: give switch");
    }
    // Said of the second of two uplinks.
    for (const PortConfig& other : config.ports) {
        if (&other == &port) {
            break;
        }
        const VxlanSettings* v = other.get<VxlanSettings>();
        if (v == nullptr) {
            continue;
        }
        if (other.switch_name == port.switch_name) {
            throw std::invalid_argument(where + "switch '" + port.switch_name +
                                        "' has a vxlan uplink already (one per switch)");
        }
        if (v->vni == vni) {
            throw std::invalid_argument(where + "vni " + std::to_string(vni) +
                                        " is another vxlan port's");
        }
        if (steals_its_port(*v) || steals_its_port(*this)) {
            if (v->vxlan_port == vxlan_port &&
                (v->vxlan_local.empty() || vxlan_local.empty() || v->vxlan_local == vxlan_local)) {
                throw std::invalid_argument(
                    where + "udp port " + std::to_string(vxlan_port) + " is vxlan port '" +
                    other.name + "''s too, and an EVPN uplink on the socket datapath takes its " +
                    "port's datagrams from the whole network namespace: give each uplink its own " +
                    "vxlan_port or vxlan_local");
            }
        }
    }
    if (!vxlan_local.empty() && !is_ip_address(vxlan_local)) {
        throw std::invalid_argument(where + "vxlan_local '" + vxlan_local +
                                    "' is not an IPv4 or IPv6 address");
    }
    std::set<std::string> remotes;
    for (const std::string& r : vxlan_remote) {
        if (!is_ip_address(r)) {
            throw std::invalid_argument(where + "vxlan_remote '" + r +
                                        "' is not an IPv4 or IPv6 address");
        }
        if (!remotes.insert(r).second) {
            throw std::invalid_argument(where + "vxlan_remote " + r + " is given twice");
        }
    }
    if (vxlan_dev.size() > 15) {
        throw std::invalid_argument(where + "vxlan_dev is longer than 15 characters");
    }
    // EVPN mode: the control plane (FRR's zebra) installs the remote VTEPs
    // and MACs, so static ones would fight it; one VLAN (the uplink's
    // untagged one) is the VNI's broadcast domain, so a trunk has no
    // meaning there.
    if (evpn && !vxlan_remote.empty()) {
        throw std::invalid_argument(where +
                                    "evpn takes the remote VTEPs from the control plane (FRR): "
                                    "give no vxlan_remote (--remote)");
    }
    if (evpn && !port.trunk.empty()) {
        throw std::invalid_argument(where +
                                    "evpn carries one VLAN, the uplink's untagged one: give no "
                                    "trunk");
    }
    if (vxlan_datapath == VxlanDatapath::socket) {
        validate_socket_datapath(*this, where);
    } else if (vxlan_source_ports) {
        throw std::invalid_argument(where +
                                    "vxlan_source_ports needs vxlan_datapath socket (the splice's "
                                    "kernel vxlan device picks a source port per flow itself)");
    }
}

std::optional<uint16_t> VxlanSettings::uplink_mtu(const PortConfig& port) const {
    return port.mtu.value_or(kDefaultVxlanMtu);
}

std::string vxlan_device_name(const VxlanSettings& vxlan) {
    return "vxlan" + std::to_string(vxlan.vni);
}

std::string vxlan_tap_name(const VxlanSettings& vxlan) {
    return "vxtap" + std::to_string(vxlan.vni);
}

std::string vxlan_bridge_name(const VxlanSettings& vxlan) {
    return "vxbr" + std::to_string(vxlan.vni);
}

}  // namespace vnet::control
