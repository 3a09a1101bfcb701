// Frames for the switch tests: a virtio-net header (12 bytes, zero) then an
// Ethernet header, an optional 802.1Q tag and a payload, each packet in its
// own buffer, gathered into a PacketBurst as a source port would hand it out.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "dataplane/switch/mac_address.hpp"
#include "packet/byte_order.hpp"
#include "packet/packet_burst.hpp"
#include "packet/wire.hpp"

namespace vnet::dataplane::switching::test {

inline constexpr uint16_t kHeader = 12;

inline packet::MacAddress mac(uint8_t last) {
    return {0x02, 0, 0, 0, 0, last};
}
inline constexpr packet::MacAddress kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

inline std::vector<uint8_t> frame(const packet::MacAddress& dst, const packet::MacAddress& src,
                                  std::optional<uint16_t> vid = std::nullopt, size_t payload = 46) {
    std::vector<uint8_t> f(kHeader, 0);
    f.insert(f.end(), dst.begin(), dst.end());
    f.insert(f.end(), src.begin(), src.end());
    if (vid) {
        f.push_back(0x81);
        f.push_back(0x00);
        f.push_back(static_cast<uint8_t>(*vid >> 8));
        f.push_back(static_cast<uint8_t>(*vid));
    }
    f.push_back(0x08);
    f.push_back(0x00);
    for (size_t i = 0; i < payload; ++i) {
        f.push_back(static_cast<uint8_t>(i));
    }
    return f;
}

// Owns the bytes the burst points at.
struct FrameBurst {
    std::deque<std::vector<uint8_t>> storage;
    packet::PacketBurst burst;

    FrameBurst() { burst.header_size = kHeader; }
    FrameBurst& add(std::vector<uint8_t> bytes) {
        storage.push_back(std::move(bytes));
        std::vector<uint8_t>& b = storage.back();
        burst.free_iovecs()[0] = iovec{b.data(), b.size()};
        burst.push(1, static_cast<uint32_t>(b.size()), burst.count);
        return *this;
    }
};

}  // namespace vnet::dataplane::switching::test
