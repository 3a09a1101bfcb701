// `vnetctl show`: port.show's answer as a multi-section text dump, VPP
// `show vhost-user` style: per port its socket and state, negotiated
// features, memory regions, every ring (size, indexes, kicks, calls), then
// its counters and drops by reason. Pure formatting, so it is unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

namespace vnet::vnetctl {

void print_show(const nlohmann::json& ports, std::ostream& out);

}  // namespace vnet::vnetctl
