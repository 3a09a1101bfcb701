#include "dataplane/switch/frame_parser.hpp"

#include <algorithm>
#include <cstring>

#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"

namespace vnet::dataplane::switching {

bool parse_l2_frame(std::span<const iovec> iovecs, uint32_t len, uint16_t header_size,
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
    std::memcpy(frame.destination.data(), eth + packet::kEthDstOffset, 6);
    std::memcpy(frame.source.data(), eth + packet::kEthSrcOffset, 6);
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
