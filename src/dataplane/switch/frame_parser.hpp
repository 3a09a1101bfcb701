// The switch's parser: only what switching needs, the Ethernet header and an
// optional 802.1Q tag, after the packet's virtio-net header. Frames are
// guest-controlled: every length is checked, and the bytes are read once
// into a local copy (a guest may rewrite its buffer while we look).
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <optional>
#include <span>

#include "packet/wire.hpp"

namespace vnet::dataplane::switching {

struct L2Frame {
    packet::MacAddress destination{};
    packet::MacAddress source{};
    bool tagged = false;
    uint16_t tci = 0;        // the 802.1Q tag control information (PCP, DEI, VID), if tagged
    uint16_t ethertype = 0;  // the type after the tag, if any
};

// The same Ethernet header: frames the switch decides and sends alike.
inline bool same_l2_header(const L2Frame& a, const L2Frame& b) {
    return a.destination == b.destination && a.source == b.source && a.tagged == b.tagged &&
           a.tci == b.tci && a.ethertype == b.ethertype;
}

// `iovecs` hold `len` bytes of packet (a shorter chain is what counts):
// `header_size` bytes of virtio-net header, then the frame. nullopt when the
// frame is shorter than its Ethernet header (and tag, if it says it has one).
std::optional<L2Frame> parse_l2_frame(std::span<const iovec> iovecs, uint32_t len,
                                      uint16_t header_size);

}  // namespace vnet::dataplane::switching
