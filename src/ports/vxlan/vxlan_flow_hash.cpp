#include "ports/vxlan/vxlan_flow_hash.hpp"

#include <cstring>

#include "packet/byte_order.hpp"

namespace vnet::ports {
namespace {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeVlan = 0x8100;  // 802.1Q
constexpr uint16_t kEtherTypeQinQ = 0x88a8;  // 802.1ad
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoSctp = 132;
constexpr uint8_t kProtoUdpLite = 136;

// Up to 8 bytes of `p`, little-endian, zero-filled.
uint64_t load_bytes(const uint8_t* p, size_t n) {
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    return v;
}

// One step of a multiplicative mix: each word moves every bit of the state.
uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

// MurmurHash3's finaliser: the high bits (which pick the lane) depend on
// every input bit.
uint32_t finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb93fe53b84ceull;
    h ^= h >> 33;
    return static_cast<uint32_t>(h >> 32);
}

bool has_ports(uint8_t protocol) {
    return protocol == kProtoTcp || protocol == kProtoUdp || protocol == kProtoSctp ||
           protocol == kProtoUdpLite;
}

}  // namespace

uint32_t vxlan_inner_flow_hash(const uint8_t* frame, size_t len) {
    uint64_t h = 0x5ca1ab1e;
    if (len < 14) {  // not even an Ethernet header: its bytes as they are
        for (size_t at = 0; at < len; at += 8) {
            h = mix(h, load_bytes(frame + at, len - at < 8 ? len - at : 8));
        }
        return finish(mix(h, len));
    }
    h = mix(h, load_bytes(frame, 6));      // destination
    h = mix(h, load_bytes(frame + 6, 6));  // source
    size_t at = 12;
    uint16_t type = packet::load_be16(frame + at);
    // Up to two tags: each VID is a broadcast domain of its own.
    for (int tags = 0; tags < 2 && (type == kEtherTypeVlan || type == kEtherTypeQinQ); ++tags) {
        if (len < at + 6) {
            break;
        }
        h = mix(h, packet::load_be16(frame + at + 2) & 0x0fffu);
        at += 4;
        type = packet::load_be16(frame + at);
    }
    h = mix(h, type);
    at += 2;  // the network header

    uint8_t protocol = 0;
    size_t ports_at = 0;  // 0: no ports to hash
    if (type == kEtherTypeIpv4 && len >= at + 20 && (frame[at] >> 4) == 4) {
        const size_t ihl = size_t{frame[at] & 0x0fu} * 4;
        protocol = frame[at + 9];
        h = mix(h, load_bytes(frame + at + 12, 8));  // source and destination
        h = mix(h, protocol);
        // RFC 791: more fragments (0x2000) or an offset: a fragment.
        const bool fragment = (packet::load_be16(frame + at + 6) & 0x3fffu) != 0;
        if (ihl >= 20 && !fragment && has_ports(protocol)) {
            ports_at = at + ihl;
        }
    } else if (type == kEtherTypeIpv6 && len >= at + 40 && (frame[at] >> 4) == 6) {
        protocol = frame[at + 6];                      // the next header
        for (size_t word = 8; word < 40; word += 8) {  // source and destination
            h = mix(h, load_bytes(frame + at + word, 8));
        }
        h = mix(h, protocol);
        if (has_ports(protocol)) {
            ports_at = at + 40;
        }
    }
    if (ports_at != 0 && len >= ports_at + 4) {
        h = mix(h, load_bytes(frame + ports_at, 4));
    }
    return finish(h);
}

}  // namespace vnet::ports
