#include "gro/merged_header.hpp"

#include <cstring>

#include "packet/internet_checksum.hpp"
#include "virtio/net_header.hpp"

namespace vnet::gro {

// The wire vocabulary: header offsets, byte order, the checksum.
using namespace packet;
namespace {

using virtio::NetHeader;

uint8_t gso_type_for(SegmentKind kind) {
    switch (kind) {
        case SegmentKind::tcp_v4:
            return NetHeader::kGsoTcpV4;
        case SegmentKind::tcp_v6:
            return NetHeader::kGsoTcpV6;
        case SegmentKind::udp_v4:
        case SegmentKind::udp_v6:
            break;
    }
    return NetHeader::kGsoUdpL4;
}

}  // namespace

void write_merged_header(const SegmentHeader& head, uint32_t payload_bytes, bool last_push,
                         uint8_t* dst) {
    std::memcpy(dst, head.bytes.data(), head.header_len);
    const bool ipv4 = is_ipv4(head.kind);
    const bool tcp = is_tcp(head.kind);
    const uint16_t l4_offset_in_frame = static_cast<uint16_t>(head.l4_offset - head.vnet_len);
    const uint32_t l4_len = head.l4_header_len() + payload_bytes;

    // virtio 1.2 §5.1.6.2: a GSO frame needs NEEDS_CSUM; hdr_len counts the
    // frame's headers (not the virtio header). num_buffers stays the head's.
    dst[virtio::kNetHeaderFlagsOffset] = NetHeader::kFlagNeedsCsum;
    dst[virtio::kNetHeaderGsoTypeOffset] = gso_type_for(head.kind);
    store_le16(dst + virtio::kNetHeaderHdrLenOffset,
               static_cast<uint16_t>(head.header_len - head.vnet_len));
    store_le16(dst + virtio::kNetHeaderGsoSizeOffset, head.payload_len);
    store_le16(dst + virtio::kNetHeaderCsumStartOffset, l4_offset_in_frame);
    store_le16(dst + virtio::kNetHeaderCsumOffsetOffset, tcp ? kTcpCheckOffset : kUdpCheckOffset);

    uint8_t* ip = dst + head.l3_offset;
    if (ipv4) {
        store_be16(ip + kIpv4TotalLenOffset, static_cast<uint16_t>(kIpv4HeaderLen + l4_len));
        store_be16(ip + kIpv4CheckOffset, 0);
        store_be16(ip + kIpv4CheckOffset, checksum_finish(checksum_add(0, ip, kIpv4HeaderLen)));
    } else {
        store_be16(ip + kIpv6PayloadLenOffset, static_cast<uint16_t>(l4_len));
    }

    uint8_t* th = dst + head.l4_offset;
    const uint8_t proto = tcp ? kIpProtoTcp : kIpProtoUdp;
    const uint16_t pseudo = pseudo_header_sum(ip, ipv4, proto, l4_len);
    if (tcp) {
        if (last_push) {
            th[kTcpFlagsOffset] |= kTcpPsh;
        }
        store_be16(th + kTcpCheckOffset, pseudo);
    } else {
        store_be16(th + kUdpLenOffset, static_cast<uint16_t>(l4_len));
        store_be16(th + kUdpCheckOffset, pseudo);
    }
}

}  // namespace vnet::gro
