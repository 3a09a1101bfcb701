// The switch's parser: only what switching needs, the Ethernet header and an
// optional 802.1Q tag, after the packet's virtio-net header. Frames are
// guest-controlled: every length is checked, and the bytes are read once
// into a local copy (a guest may rewrite its buffer while we look).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "dataplane/switch/mac_address.hpp"
#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "packet/wire.hpp"

namespace vnet::dataplane::switching {

struct L2Frame {
    // The addresses as mac_bits gives them (48 bits, memory order): read
    // once from the parser's copy, then compared, tested and made into
    // table keys as integers.
    uint64_t destination = 0;
    uint64_t source = 0;
    bool tagged = false;
    uint16_t tci = 0;        // the 802.1Q tag control information (PCP, DEI, VID), if tagged
    uint16_t ethertype = 0;  // the type after the tag, if any
};

// The most bytes the parser reads: the largest virtio-net header (12), the
// Ethernet header and one tag.
inline constexpr size_t kMaxL2Prefix = 12 + packet::kEthHeaderLen + packet::kVlanTagLen;
// The parser's private copy of a packet's first bytes: its virtio-net
// header, then its Ethernet header and tag (as many bytes as it has, up to
// kMaxL2Prefix; the rest unspecified).
using L2Prefix = std::array<uint8_t, kMaxL2Prefix>;

// The same Ethernet header: frames the switch decides and sends alike.
inline bool same_l2_header(const L2Frame& a, const L2Frame& b) {
    return a.destination == b.destination && a.source == b.source && a.tagged == b.tagged &&
           a.tci == b.tci && a.ethertype == b.ethertype;
}

// `iovecs` hold `len` bytes of packet (a shorter chain is what counts):
// `header_size` bytes of virtio-net header, then the frame, parsed into
// `frame`, from the copy of its first bytes it leaves in `prefix` (the
// switch sends that copy: what it decided on is what leaves). False (and
// `frame`, `prefix` unspecified) when the frame is shorter than its
// Ethernet header (and tag, if it says it has one). Out parameters,
// not a returned optional: the switch parses a burst into an array, and a
// frame assembled elsewhere from 6-, 2- and 1-byte stores and copied in as
// 16-byte loads is a store-forwarding stall per packet. Inline: called
// once per frame by the switch, where the call cost a third of the parse.
inline bool parse_l2_frame(std::span<const iovec> iovecs, uint32_t len, uint16_t header_size,
                           L2Frame& frame, L2Prefix& prefix) {
    if (header_size > 12) {
        return false;
    }
    uint8_t* bytes = prefix.data();
    const size_t want =
        std::min<size_t>(header_size + packet::kEthHeaderLen + packet::kVlanTagLen, len);
    size_t got = want;
    if (!iovecs.empty() && iovecs[0].iov_len >= kMaxL2Prefix) [[likely]] {
        // The first descriptor holds every byte the parser may want: one
        // copy of a constant size (a few moves), not a copy loop of `want`.
        std::memcpy(bytes, iovecs[0].iov_base, kMaxL2Prefix);
    } else {
        got = packet::gather_prefix(iovecs, bytes, want);
    }
    if (got < header_size + packet::kEthHeaderLen) {
        return false;
    }
    const uint8_t* eth = bytes + header_size;
    const bool tagged = packet::load_be16(eth + packet::kEthTypeOffset) == packet::kEtherTypeVlan;
    if (tagged && got < header_size + packet::kEthHeaderLen + packet::kVlanTagLen) {
        return false;  // a tag announced but cut off
    }
    frame.destination = mac_bits_at(eth + packet::kEthDstOffset);
    frame.source = mac_bits_at(eth + packet::kEthSrcOffset);
    frame.tagged = tagged;
    if (tagged) {
        frame.tci = packet::load_be16(eth + packet::kEthTypeOffset + 2);
        frame.ethertype = packet::load_be16(eth + packet::kEthTypeOffset + packet::kVlanTagLen);
    } else {
        frame.tci = 0;
        frame.ethertype = packet::load_be16(eth + packet::kEthTypeOffset);
    }
    return true;
}

}  // namespace vnet::dataplane::switching
