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
    if (header_size > 12) {
        return std::nullopt;
    }
    uint8_t bytes[kMaxPrefix];
    const size_t want =
        std::min<size_t>(header_size + packet::kEthHeaderLen + packet::kVlanTagLen, len);
    const size_t got = packet::gather_prefix(iovecs, bytes, want);
    if (got < header_size + packet::kEthHeaderLen) {
        return std::nullopt;
    }
    const uint8_t* eth = bytes + header_size;
    L2Frame frame;
    std::memcpy(frame.destination.data(), eth + packet::kEthDstOffset, 6);
    std::memcpy(frame.source.data(), eth + packet::kEthSrcOffset, 6);
    if (packet::load_be16(eth + packet::kEthTypeOffset) == packet::kEtherTypeVlan) {
        if (got < header_size + packet::kEthHeaderLen + packet::kVlanTagLen) {
            return std::nullopt;  // a tag announced but cut off
        }
        frame.tagged = true;
        frame.tci = packet::load_be16(eth + packet::kEthTypeOffset + 2);
    }
    return frame;
}

}  // namespace vnet::dataplane::switching
