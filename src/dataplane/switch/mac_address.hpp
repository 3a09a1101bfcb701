// MAC addresses as the switch reads and prints them: the text form of the
// config and vnetctl ("02:00:00:00:00:01"), and the two IEEE 802 bits the
// switch decides by (group = multicast/broadcast; all-zero = no sender).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "packet/wire.hpp"

namespace vnet::dataplane::switching {

using packet::MacAddress;

// IEEE 802-2014 §8.2: the I/G bit, the first bit on the wire, marks a group
// address (multicast; broadcast is the all-ones group).
inline bool is_group_address(const MacAddress& mac) {
    return (mac[0] & 0x01) != 0;
}
inline bool is_zero_address(const MacAddress& mac) {
    return (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) == 0;
}

// Six hex pairs separated by ':' (or '-'); nullopt for anything else.
std::optional<MacAddress> parse_mac(std::string_view text);
std::string to_string(const MacAddress& mac);

}  // namespace vnet::dataplane::switching
