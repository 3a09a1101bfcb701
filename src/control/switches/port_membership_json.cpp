#include "control/switches/port_membership_json.hpp"

#include "dataplane/switch/mac_address.hpp"

namespace vnet::control {

void add_membership_fields(const PortConfig& port, nlohmann::json& out) {
    if (port.switch_name.empty()) {
        return;
    }
    out["switch"] = port.switch_name;
    out["vlan"] = port.vlan ? nlohmann::json(*port.vlan) : nlohmann::json();
    out["trunk"] = port.trunk;
    nlohmann::json macs = nlohmann::json::array();
    for (const packet::MacAddress& mac : port.allowed_macs) {
        macs.push_back(dataplane::switching::to_string(mac));
    }
    out["allowed_macs"] = std::move(macs);
}

}  // namespace vnet::control
