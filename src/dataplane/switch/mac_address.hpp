// MAC addresses as the switch reads and prints them: the text form of the
// config and vnetctl ("02:00:00:00:00:01"), and the two IEEE 802 bits the
// switch decides by (group = multicast/broadcast; all-zero = no sender).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "packet/wire.hpp"

namespace vnet::dataplane::switching {

using packet::MacAddress;

// The six bytes as one integer, in memory order. Read as a 4- and a 2-byte
// load, the sizes the parser stores them with: a MAC written a moment ago
// and read back as 8 bytes (or compared by a memcmp call, which is what
// std::array's == becomes) stalls on store forwarding, once per packet.
inline uint64_t mac_bits_at(const uint8_t* mac) {
    uint32_t low;
    uint16_t high;
    std::memcpy(&low, mac, sizeof low);
    std::memcpy(&high, mac + sizeof low, sizeof high);
    return uint64_t{low} | uint64_t{high} << 32;
}
inline uint64_t mac_bits(const MacAddress& mac) {
    return mac_bits_at(mac.data());
}
inline bool same_address(const MacAddress& a, const MacAddress& b) {
    return mac_bits(a) == mac_bits(b);
}

// IEEE 802-2014 §8.2: the I/G bit, the first bit on the wire, marks a group
// address (multicast; broadcast is the all-ones group).
inline bool is_group_address(const MacAddress& mac) {
    return (mac[0] & 0x01) != 0;
}
inline bool is_zero_address(const MacAddress& mac) {
    return mac_bits(mac) == 0;
}
// The same two bits of an address as mac_bits gives it (its first byte lowest).
inline bool is_group_address(uint64_t bits) {
    return (bits & 0x01) != 0;
}
inline bool is_zero_address(uint64_t bits) {
    return bits == 0;
}

// Six hex pairs separated by ':' (or '-'); nullopt for anything else.
std::optional<MacAddress> parse_mac(std::string_view text);
std::string to_string(const MacAddress& mac);

}  // namespace vnet::dataplane::switching
