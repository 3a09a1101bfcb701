#include "frontend/packet_builder.hpp"

#include <cstring>

#include "packet/byte_order.hpp"
#include "packet/internet_checksum.hpp"
#include "virtio/net_header.hpp"

namespace vnet::frontend {
namespace {

using namespace packet;  // byte order, the checksum, wire offsets

using virtio::NetHeader;
static_assert(sizeof(NetHeader) == PacketBuilder::kNetHeaderLen);

constexpr uint8_t kIpTtl = 64;
constexpr uint8_t kTcpFlagsAckPsh = kTcpAck | kTcpPsh;
constexpr uint16_t kTcpWindow = 0xffff;

size_t payload_offset(FrameKind kind) {
    return kind == FrameKind::udp ? kUdpPayloadOffset : kTcpPayloadOffset;
}

uint8_t ip_protocol(FrameKind kind) {
    return kind == FrameKind::udp ? kIpProtoUdp : kIpProtoTcp;
}

void write_ipv4_header(std::byte* ip, const FlowAddresses& flow, uint8_t protocol) {
    ip[0] = std::byte{kIpv4VersionIhl5};
    ip[1] = std::byte{0};
    store_be16(ip + kIpv4TotalLenOffset, 0);  // per packet
    store_be16(ip + kIpv4IdOffset, 0);        // DF is set, so it identifies nothing (RFC 6864)
    store_be16(ip + kIpv4FragOffset, kIpv4DontFragment);
    ip[kIpv4TtlOffset] = std::byte{kIpTtl};
    ip[kIpv4ProtoOffset] = std::byte{protocol};
    store_be16(ip + kIpv4CheckOffset, 0);  // per packet
    store_be32(ip + kIpv4SrcOffset, flow.src_ip);
    store_be32(ip + kIpv4SrcOffset + 4, flow.dst_ip);
}

// Sets total length and header checksum. The header's other fields are
// constant, so summing all 20 bytes again costs as much as keeping a
// partial sum around and is harder to get wrong.
void finish_ipv4_header(std::byte* ip, uint16_t total_len) {
    store_be16(ip + kIpv4TotalLenOffset, total_len);
    store_be16(ip + kIpv4CheckOffset, 0);
    store_be16(ip + kIpv4CheckOffset, checksum_finish(checksum_add(0, ip, kIpv4HeaderLen)));
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

    std::memcpy(frame + kEthDstOffset, flow_.dst_mac.data(), flow_.dst_mac.size());
    std::memcpy(frame + kEthSrcOffset, flow_.src_mac.data(), flow_.src_mac.size());
    store_be16(frame + kEthTypeOffset, kEtherTypeIpv4);
    write_ipv4_header(frame + kIpOffset, flow_, ip_protocol(kind_));

    std::byte* l4 = frame + kL4Offset;
    store_be16(l4, flow_.src_port);
    store_be16(l4 + 2, flow_.dst_port);
    if (kind_ == FrameKind::udp) {
        store_be16(l4 + kUdpLenOffset, 0);    // per packet
        store_be16(l4 + kUdpCheckOffset, 0);  // no checksum (allowed for UDP over IPv4, RFC 768)
    } else {
        store_be32(l4 + kTcpSeqOffset, 0);  // per packet
        store_be32(l4 + kTcpAckOffset, 0);
        l4[kTcpDataOffsetOffset] = std::byte{(kTcpHeaderLen / 4) << 4};
        l4[kTcpFlagsOffset] = std::byte{kTcpFlagsAckPsh};
        store_be16(l4 + kTcpWindowOffset, kTcpWindow);
        store_be16(l4 + kTcpCheckOffset, 0);  // per packet (pseudo header only)
        store_be16(l4 + kTcpUrgentOffset, 0);

        // virtio 1.2 §5.1.6.2: the device (or whoever segments the frame)
        // completes the checksum from csum_start, storing at +csum_offset.
        NetHeader hdr{};
        hdr.flags = NetHeader::kFlagNeedsCsum;
        hdr.hdr_len = static_cast<uint16_t>(kTcpPayloadOffset);
        hdr.csum_start = static_cast<uint16_t>(kL4Offset);
        hdr.csum_offset = static_cast<uint16_t>(kTcpCheckOffset);
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
    store_be16(frame + kL4Offset + kUdpLenOffset, static_cast<uint16_t>(frame_len - kL4Offset));
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
    store_be32(tcp + kTcpSeqOffset, static_cast<uint32_t>(seq * payload_len));
    // CHECKSUM_PARTIAL convention (Linux, virtio): the field holds the
    // folded pseudo-header sum, not complemented; the device adds the rest.
    store_be16(tcp + kTcpCheckOffset, checksum_fold(pseudo_header_base_ + tcp_len));

    NetHeader hdr;
    std::memcpy(&hdr, header, sizeof hdr);
    const bool segment = payload_len > mss_;
    hdr.gso_type = segment ? NetHeader::kGsoTcpV4 : NetHeader::kGsoNone;
    hdr.gso_size = segment ? mss_ : uint16_t{0};
    std::memcpy(header, &hdr, sizeof hdr);
    return frame_len;
}

}  // namespace vnet::frontend
