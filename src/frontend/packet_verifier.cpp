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
// The most pieces (mergeable RX buffers) a frame is checked in.
constexpr size_t kMaxFramePieces = 256;

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
        case FrameVerdict::bad_l4_checksum:
            return "bad-l4-checksum";
    }
    return "unknown";
}

PacketVerifier::PacketVerifier() : reference_payload_(kMaxGsoFrameLen) {
    for (size_t i = 0; i < reference_payload_.size(); ++i) {
        reference_payload_[i] = std::byte{pattern_byte(i)};
    }
}

FrameCheck PacketVerifier::check(std::span<const FramePiece> pieces, bool partial_checksum) {
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
    FrameCheck result{.verdict = FrameVerdict::ok};
    // Where this frame's payload sits in the pattern, and how much of it is
    // the stamp (only a frame's first segment has one).
    size_t pattern_offset = 0;
    size_t stamp = kStampLen;
    const uint32_t tcp_seq = load_be32(&head[kL4Offset + packet::kTcpSeqOffset]);
    if (load_le64(&head[payload]) == kStampMagic) {
        result.seq = load_le64(&head[payload + 8]);
        if (protocol == kIpProtoTcp) {
            tcp_frame_seen_ = true;
            tcp_frame_seq_ = tcp_seq;
        }
    } else if (protocol == kIpProtoTcp && tcp_frame_seen_ &&
               tcp_seq - tcp_frame_seq_ >= kStampLen &&
               tcp_seq - tcp_frame_seq_ < reference_payload_.size()) {
        result.continuation = true;
        pattern_offset = tcp_seq - tcp_frame_seq_;
        stamp = 0;
    } else {
        return {};
    }

    const size_t ip_len = load_be16(&head[kIpOffset + packet::kIpv4TotalLenOffset]);
    // Our frames are never padded (each has at least 60 bytes of content),
    // so the datagram must end exactly where the received frame ends.
    if (ip_len + kEthHeaderLen != frame_len ||
        (protocol == kIpProtoUdp &&
         load_be16(&head[kL4Offset + packet::kUdpLenOffset]) + kL4Offset != frame_len)) {
        result.verdict = FrameVerdict::bad_length;
    } else if (checksum_fold(checksum_add(0, &head[kIpOffset], kIpv4HeaderLen)) != 0xffff) {
        result.verdict = FrameVerdict::bad_ip_checksum;
    } else if (protocol == kIpProtoTcp &&
               !tcp_checksum_ok(pieces, &head[kIpOffset], frame_len, partial_checksum)) {
        result.verdict = FrameVerdict::bad_l4_checksum;
    } else if (!payload_matches(pieces, payload, pattern_offset, stamp)) {
        result.verdict = FrameVerdict::bad_payload;
    }
    return result;
}

bool PacketVerifier::tcp_checksum_ok(std::span<const FramePiece> pieces, const std::byte* ip,
                                     size_t frame_len, bool partial) const {
    const auto tcp_len = static_cast<uint32_t>(frame_len - kL4Offset);
    const uint16_t pseudo =
        pseudo_header_sum(reinterpret_cast<const uint8_t*>(ip), true, kIpProtoTcp, tcp_len);
    if (partial) {
        // CHECKSUM_PARTIAL: the field holds the pseudo-header sum.
        std::array<std::byte, kL4Offset + kTcpCheckOffset + 2> head{};
        gather_prefix(pieces, head.data(), head.size());
        return load_be16(&head[kL4Offset + kTcpCheckOffset]) == pseudo;
    }
    std::array<iovec, kMaxFramePieces> tcp{};
    const int n = slice_iovecs(pieces, kL4Offset, tcp_len, tcp);
    return n >= 0 && checksum_add_iovecs(pseudo, {tcp.data(), static_cast<size_t>(n)}) == 0xffff;
}

bool PacketVerifier::payload_matches(std::span<const FramePiece> pieces, size_t payload_offset,
                                     size_t pattern_offset, size_t skip) const {
    const size_t pattern_start = payload_offset + skip;  // frame offset
    size_t offset = 0;                                   // frame offset of piece start
    for (const FramePiece& piece : pieces) {
        const size_t end = offset + piece.iov_len;
        if (end > pattern_start) {
            const size_t from = std::max(offset, pattern_start);
            const size_t ref = from - payload_offset + pattern_offset;
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
