#include "dataplane/switch/mac_address.hpp"

#include <cstdio>

namespace vnet::dataplane::switching {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

}  // namespace

std::optional<MacAddress> parse_mac(std::string_view text) {
    // "xx:xx:xx:xx:xx:xx": 17 characters, a separator after each pair.
    if (text.size() != 17) {
        return std::nullopt;
    }
    MacAddress mac{};
    for (size_t i = 0; i < 6; ++i) {
        int hi = hex_digit(text[3 * i]);
        int lo = hex_digit(text[3 * i + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        if (i < 5 && text[3 * i + 2] != ':' && text[3 * i + 2] != '-') {
            return std::nullopt;
        }
        mac[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return mac;
}

std::string to_string(const MacAddress& mac) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                  mac[4], mac[5]);
    return buf;
}

}  // namespace vnet::dataplane::switching
