#include "frontend/packet_verifier.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "frontend/frame_format.hpp"
#include "packet/byte_order.hpp"
#include "packet/internet_checksum.hpp"
#include "packet/iovec.hpp"

namespace vnet::frontend {
namespace {

using namespace packet;  // byte order, the checksum, iovecs, wire offsets

// Enough contiguous bytes to parse either frame kind up to its stamp.
constexpr size_t kParseLen = kTcpPayloadOffset + kStampLen;

}  // namespace

const char* to_string(FrameVerdict v) {
    switch (v) {
        case FrameVerdict::ok:
            return "ok";
        case FrameVerdict::foreign:
            return "foreign";
        case FrameVerdict::bad_length:
            return "bad-length";
        case FrameVerdict::bad_ip_checksum:
            return "bad-ip-checksum";
        case FrameVerdict::bad_payload:
            return "bad-payload";
    }
    return "unknown";
}

PacketVerifier::PacketVerifier() : reference_payload_(kMaxGsoFrameLen) {
    for (size_t i = 0; i < reference_payload_.size(); ++i) {
        reference_payload_[i] = std::byte{pattern_byte(i)};
    }
}

FrameCheck PacketVerifier::check(std::span<const FramePiece> pieces) const {
    std::array<std::byte, kParseLen> head{};
    const size_t have = gather_prefix(pieces, head.data(), head.size());
    const size_t frame_len = total_length(pieces);
    if (have < kUdpPayloadOffset + kStampLen ||
        load_be16(&head[packet::kEthTypeOffset]) != kEtherTypeIpv4 ||
        head[kIpOffset] != std::byte{packet::kIpv4VersionIhl5}) {
        return {};
    }
    const auto protocol = static_cast<uint8_t>(head[kIpOffset + packet::kIpv4ProtoOffset]);
    size_t payload;
    if (protocol == kIpProtoUdp) {
        payload = kUdpPayloadOffset;
    } else if (protocol == kIpProtoTcp && have >= kTcpPayloadOffset + kStampLen) {
        payload = kTcpPayloadOffset;
    } else {
        return {};
    }
    if (load_le64(&head[payload]) != kStampMagic) {
        return {};
    }

    FrameCheck result{.verdict = FrameVerdict::ok, .seq = load_le64(&head[payload + 8])};
    const size_t ip_len = load_be16(&head[kIpOffset + packet::kIpv4TotalLenOffset]);
    // Our frames are never padded (each has at least 60 bytes of content),
    // so the datagram must end exactly where the received frame ends.
    if (ip_len + kEthHeaderLen != frame_len ||
        (protocol == kIpProtoUdp &&
         load_be16(&head[kL4Offset + packet::kUdpLenOffset]) + kL4Offset != frame_len)) {
        result.verdict = FrameVerdict::bad_length;
    } else if (checksum_fold(checksum_add(0, &head[kIpOffset], kIpv4HeaderLen)) != 0xffff) {
        result.verdict = FrameVerdict::bad_ip_checksum;
    } else if (!payload_matches(pieces, payload)) {
        result.verdict = FrameVerdict::bad_payload;
    }
    return result;
}

bool PacketVerifier::payload_matches(std::span<const FramePiece> pieces,
                                     size_t payload_offset) const {
    const size_t pattern_start = payload_offset + kStampLen;  // frame offset
    size_t offset = 0;                                        // frame offset of piece start
    for (const FramePiece& piece : pieces) {
        const size_t end = offset + piece.iov_len;
        if (end > pattern_start) {
            const size_t from = std::max(offset, pattern_start);
            const size_t ref = from - payload_offset;
            const size_t n = end - from;
            if (ref + n > reference_payload_.size() ||
                std::memcmp(static_cast<const std::byte*>(piece.iov_base) + (from - offset),
                            reference_payload_.data() + ref, n) != 0) {
                return false;
            }
        }
        offset = end;
    }
    return true;
}

}  // namespace vnet::frontend
