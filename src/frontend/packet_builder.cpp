#include "frontend/packet_builder.hpp"

#include <cstring>

#include "frontend/byte_order.hpp"
#include "frontend/internet_checksum.hpp"
#include "virtio/net_header.hpp"

namespace vnet::frontend {
namespace {

using virtio::NetHeader;
static_assert(sizeof(NetHeader) == PacketBuilder::kNetHeaderLen);

constexpr uint16_t kIpFlagDontFragment = 0x4000;
constexpr uint8_t kIpTtl = 64;
constexpr uint8_t kTcpFlagsAckPsh = 0x18;
constexpr uint16_t kTcpWindow = 0xffff;

size_t payload_offset(FrameKind kind) {
    return kind == FrameKind::udp ? kUdpPayloadOffset : kTcpPayloadOffset;
}

uint8_t ip_protocol(FrameKind kind) {
    return kind == FrameKind::udp ? kIpProtoUdp : kIpProtoTcp;
}

void write_ipv4_header(std::byte* ip, const FlowAddresses& flow, uint8_t protocol) {
    ip[0] = std::byte{0x45};  // version 4, 5 words
    ip[1] = std::byte{0};
    store_be16(ip + 2, 0);  // total length: per packet
    store_be16(ip + 4, 0);  // id: DF is set, so it identifies nothing (RFC 6864)
    store_be16(ip + 6, kIpFlagDontFragment);
    ip[8] = std::byte{kIpTtl};
    ip[9] = std::byte{protocol};
    store_be16(ip + 10, 0);  // checksum: per packet
    store_be32(ip + 12, flow.src_ip);
    store_be32(ip + 16, flow.dst_ip);
}

// Sets total length and header checksum. The header's other fields are
// constant, so summing all 20 bytes again costs as much as keeping a
// partial sum around and is harder to get wrong.
void finish_ipv4_header(std::byte* ip, uint16_t total_len) {
    store_be16(ip + 2, total_len);
    store_be16(ip + 10, 0);
    store_be16(ip + 10, checksum_finish(checksum_add(0, ip, kIpv4HeaderLen)));
}

}  // namespace

PacketBuilder::PacketBuilder(const FlowAddresses& flow, FrameKind kind, uint16_t mss)
    : flow_(flow), kind_(kind), mss_(mss == 0 ? uint16_t{1448} : mss) {
    std::byte pseudo[12] = {};
    store_be32(pseudo, flow_.src_ip);
    store_be32(pseudo + 4, flow_.dst_ip);
    pseudo[9] = std::byte{ip_protocol(kind_)};
    pseudo_header_base_ = checksum_add(0, pseudo, sizeof pseudo);  // length added per packet
}

uint32_t PacketBuilder::min_frame_len() const {
    const auto with_stamp = static_cast<uint32_t>(payload_offset(kind_) + kStampLen);
    return with_stamp < kMinFrameLen ? kMinFrameLen : with_stamp;
}

uint32_t PacketBuilder::max_frame_len() const {
    return kind_ == FrameKind::udp ? kMaxUdpFrameLen : kMaxGsoFrameLen;
}

void PacketBuilder::prepare_slot(std::span<std::byte> slot) const {
    std::memset(slot.data(), 0, kNetHeaderLen);
    std::byte* frame = slot.data() + kNetHeaderLen;
    const size_t capacity = slot.size() - kNetHeaderLen;

    std::memcpy(frame, flow_.dst_mac.data(), 6);
    std::memcpy(frame + 6, flow_.src_mac.data(), 6);
    store_be16(frame + 12, kEtherTypeIpv4);
    write_ipv4_header(frame + kIpOffset, flow_, ip_protocol(kind_));

    std::byte* l4 = frame + kL4Offset;
    store_be16(l4, flow_.src_port);
    store_be16(l4 + 2, flow_.dst_port);
    if (kind_ == FrameKind::udp) {
        store_be16(l4 + 4, 0);  // length: per packet
        store_be16(l4 + 6, 0);  // no checksum (allowed for UDP over IPv4, RFC 768)
    } else {
        store_be32(l4 + 4, 0);  // sequence: per packet
        store_be32(l4 + 8, 0);  // ack
        l4[12] = std::byte{(kTcpHeaderLen / 4) << 4};
        l4[13] = std::byte{kTcpFlagsAckPsh};
        store_be16(l4 + 14, kTcpWindow);
        store_be16(l4 + 16, 0);  // checksum: per packet (pseudo header only)
        store_be16(l4 + 18, 0);

        // virtio 1.2 §5.1.6.2: the device (or whoever segments the frame)
        // completes the checksum from csum_start, storing at +csum_offset.
        NetHeader hdr{};
        hdr.flags = NetHeader::kFlagNeedsCsum;
        hdr.hdr_len = static_cast<uint16_t>(kTcpPayloadOffset);
        hdr.csum_start = static_cast<uint16_t>(kL4Offset);
        hdr.csum_offset = static_cast<uint16_t>(kTcpChecksumOffset);
        std::memcpy(slot.data(), &hdr, sizeof hdr);
    }

    const size_t payload = payload_offset(kind_);
    store_le64(frame + payload, kStampMagic);
    for (size_t i = payload + kStampLen; i < capacity; ++i) {
        frame[i] = std::byte{pattern_byte(i - payload)};
    }
}

uint32_t PacketBuilder::stamp(std::span<std::byte> slot, uint64_t seq, uint32_t frame_len) const {
    std::byte* frame = slot.data() + kNetHeaderLen;
    store_le64(frame + payload_offset(kind_) + 8, seq);
    const uint32_t len = kind_ == FrameKind::udp ? stamp_udp(frame, frame_len)
                                                 : stamp_tcp(slot.data(), frame, seq, frame_len);
    return static_cast<uint32_t>(kNetHeaderLen) + len;
}

uint32_t PacketBuilder::stamp_udp(std::byte* frame, uint32_t frame_len) const {
    finish_ipv4_header(frame + kIpOffset, static_cast<uint16_t>(frame_len - kEthHeaderLen));
    store_be16(frame + kL4Offset + 4, static_cast<uint16_t>(frame_len - kL4Offset));
    return frame_len;
}

uint32_t PacketBuilder::stamp_tcp(std::byte* header, std::byte* frame, uint64_t seq,
                                  uint32_t frame_len) const {
    const auto ip_len = static_cast<uint16_t>(frame_len - kEthHeaderLen);
    const auto tcp_len = static_cast<uint16_t>(frame_len - kL4Offset);
    const uint32_t payload_len = frame_len - static_cast<uint32_t>(kTcpPayloadOffset);
    finish_ipv4_header(frame + kIpOffset, ip_len);

    std::byte* tcp = frame + kL4Offset;
    // Consecutive frames of one size form a contiguous byte stream, which
    // lets a receiver's GRO merge them as it would a real flow.
    store_be32(tcp + 4, static_cast<uint32_t>(seq * payload_len));
    // CHECKSUM_PARTIAL convention (Linux, virtio): the field holds the
    // folded pseudo-header sum, not complemented; the device adds the rest.
    store_be16(tcp + kTcpChecksumOffset, checksum_fold(pseudo_header_base_ + tcp_len));

    NetHeader hdr;
    std::memcpy(&hdr, header, sizeof hdr);
    const bool segment = payload_len > mss_;
    hdr.gso_type = segment ? NetHeader::kGsoTcpV4 : NetHeader::kGsoNone;
    hdr.gso_size = segment ? mss_ : uint16_t{0};
    std::memcpy(header, &hdr, sizeof hdr);
    return frame_len;
}

}  // namespace vnet::frontend
