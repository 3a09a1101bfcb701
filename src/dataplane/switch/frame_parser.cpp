#include "dataplane/switch/frame_parser.hpp"

#include <algorithm>
#include <cstring>

#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"

namespace vnet::dataplane::switching {

namespace {
// The largest virtio-net header (12 bytes) plus Ethernet and one tag.
constexpr size_t kMaxPrefix = 12 + packet::kEthHeaderLen + packet::kVlanTagLen;
}  // namespace

std::optional<L2Frame> parse_l2_frame(std::span<const iovec> iovecs, uint32_t len,
                                      uint16_t header_size) {
    // One result object, written in place and returned by name: a frame
    // built as a local and copied out is assembled from 6-, 2- and 1-byte
    // stores and read back as 16 bytes, a store-forwarding stall per packet.
    std::optional<L2Frame> result;
    if (header_size > 12) {
        return result;
    }
    uint8_t bytes[kMaxPrefix];
    const size_t want =
        std::min<size_t>(header_size + packet::kEthHeaderLen + packet::kVlanTagLen, len);
    const size_t got = packet::gather_prefix(iovecs, bytes, want);
    if (got < header_size + packet::kEthHeaderLen) {
        return result;
    }
    const uint8_t* eth = bytes + header_size;
    const bool tagged = packet::load_be16(eth + packet::kEthTypeOffset) == packet::kEtherTypeVlan;
    if (tagged && got < header_size + packet::kEthHeaderLen + packet::kVlanTagLen) {
        return result;  // a tag announced but cut off
    }
    L2Frame& frame = result.emplace();
    std::memcpy(frame.destination.data(), eth + packet::kEthDstOffset, 6);
    std::memcpy(frame.source.data(), eth + packet::kEthSrcOffset, 6);
    if (tagged) {
        frame.tagged = true;
        frame.tci = packet::load_be16(eth + packet::kEthTypeOffset + 2);
        frame.ethertype = packet::load_be16(eth + packet::kEthTypeOffset + packet::kVlanTagLen);
    } else {
        frame.ethertype = packet::load_be16(eth + packet::kEthTypeOffset);
    }
    return result;
}

}  // namespace vnet::dataplane::switching
