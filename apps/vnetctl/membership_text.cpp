#include "membership_text.hpp"

namespace vnet::vnetctl {
namespace {

using nlohmann::json;

std::string joined(const json& list) {
    std::string out;
    for (const json& v : list) {
        out += (out.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
    }
    return out;
}

}  // namespace

std::string membership_text(const json& port) {
    if (!port.contains("switch") || !port["switch"].is_string()) {
        return "-";
    }
    std::string text = port["switch"].get<std::string>();
    const json trunk = port.value("trunk", json::array());
    const json vlan = port.value("vlan", json());
    if (!trunk.empty()) {
        text += " trunk " + joined(trunk);
        if (!vlan.is_null()) {
            text += " native " + vlan.dump();
        }
    } else if (!vlan.is_null()) {
        text += " vlan " + vlan.dump();
    }
    return text;
}

std::string allowed_macs_text(const json& port) {
    if (!port.contains("switch") || !port["switch"].is_string()) {
        return "-";
    }
    const json macs = port.value("allowed_macs", json::array());
    return macs.empty() ? "any" : joined(macs);
}

}  // namespace vnet::vnetctl
