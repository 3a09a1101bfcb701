// virtio-net packet header (virtio 1.2 §5.1.6). With VERSION_1 or MRG_RXBUF
// it is 12 bytes (virtio_net_hdr_v1 / _mrg_rxbuf); only legacy devices without
// either use the 10-byte form. vnetd negotiates VERSION_1, so 12 is the norm,
// and the tap is set to the same size (TUNSETVNETHDRSZ) so headers pass
// through unchanged.
#pragma once

#include <cstddef>
#include <cstdint>

#include "virtio/features.hpp"

namespace vnet::virtio {

struct NetHeader {
    static constexpr uint8_t kFlagNeedsCsum = 1;
    static constexpr uint8_t kFlagDataValid = 2;
    static constexpr uint8_t kFlagRscInfo = 4;

    static constexpr uint8_t kGsoNone = 0;
    static constexpr uint8_t kGsoTcpV4 = 1;
    static constexpr uint8_t kGsoUdp = 3;
    static constexpr uint8_t kGsoTcpV6 = 4;
    static constexpr uint8_t kGsoUdpL4 = 5;
    static constexpr uint8_t kGsoEcn = 0x80;

    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;
    uint16_t gso_size;
    uint16_t csum_start;
    uint16_t csum_offset;
    uint16_t num_buffers;  // only meaningful with MRG_RXBUF; set to 1 otherwise (VERSION_1)
};
static_assert(sizeof(NetHeader) == 12);
static_assert(offsetof(NetHeader, num_buffers) == 10);

inline constexpr size_t kLegacyNetHeaderSize = 10;

// Field offsets, for header bytes copied out of a packet or patched in place
// (the fields are little-endian: packet/byte_order.hpp's load_le16).
inline constexpr size_t kNetHeaderFlagsOffset = offsetof(NetHeader, flags);
inline constexpr size_t kNetHeaderGsoTypeOffset = offsetof(NetHeader, gso_type);
inline constexpr size_t kNetHeaderHdrLenOffset = offsetof(NetHeader, hdr_len);
inline constexpr size_t kNetHeaderGsoSizeOffset = offsetof(NetHeader, gso_size);
inline constexpr size_t kNetHeaderCsumStartOffset = offsetof(NetHeader, csum_start);
inline constexpr size_t kNetHeaderCsumOffsetOffset = offsetof(NetHeader, csum_offset);
inline constexpr size_t kNetHeaderNumBuffersOffset = offsetof(NetHeader, num_buffers);

// virtio 1.2 §5.1.6: the header is 12 bytes when VERSION_1 or MRG_RXBUF is
// negotiated, 10 otherwise.
constexpr size_t net_header_size(FeatureSet negotiated) {
    return negotiated.has(Feature::version_1) || negotiated.has(Feature::net_mrg_rxbuf)
               ? sizeof(NetHeader)
               : kLegacyNetHeaderSize;
}

}  // namespace vnet::virtio
