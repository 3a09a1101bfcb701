#include "gro/segment_header.hpp"

#include <algorithm>
#include <cstring>

#include "packet/internet_checksum.hpp"
#include "packet/iovec.hpp"
#include "virtio/net_header.hpp"

namespace vnet::gro {

// The wire vocabulary: header offsets, byte order, the checksum.
using namespace packet;
namespace {

using virtio::NetHeader;

// Flags a run never carries: they change connection state (SYN/FIN/RST),
// point into the payload (URG) or must reach only the first segment (CWR).
constexpr uint8_t kTcpUnmergeableFlags = kTcpFin | kTcpSyn | kTcpRst | kTcpUrg | kTcpCwr;

// The smallest packet worth parsing: IPv4 + UDP header + 1 payload byte.
constexpr uint32_t kMinSegmentLen = kEthHeaderLen + kIpv4HeaderLen + kUdpHeaderLen + 1;

// The iovecs must hold exactly `len` bytes: a merged frame re-slices the
// payload from them, and a frame that wrote more or fewer bytes than a
// pass-through would is not the same packet.
bool iovecs_hold_exactly(std::span<const iovec> iovs, uint32_t len) {
    size_t total = 0;
    for (const iovec& piece : iovs) {
        if (piece.iov_len > len - total) {
            return false;
        }
        total += piece.iov_len;
    }
    return total == len;
}

// One byte of a packet at `offset`, read once from (guest) memory the
// guest may be writing: a relaxed atomic load is one plain load the
// compiler may neither repeat nor tear. False past the end of `iovs`.
inline bool peek_byte(std::span<const iovec> iovs, size_t offset, uint8_t& out) {
    for (const iovec& piece : iovs) {
        if (offset < piece.iov_len) {
            out = __atomic_load_n(static_cast<const uint8_t*>(piece.iov_base) + offset,
                                  __ATOMIC_RELAXED);
            return true;
        }
        offset -= piece.iov_len;
    }
    return false;
}

bool equal_range(const SegmentHeader& a, const SegmentHeader& b, size_t from, size_t to) {
    return std::memcmp(a.bytes.data() + from, b.bytes.data() + from, to - from) == 0;
}

}  // namespace

namespace {

// The peek's tests, over `byte_at(offset, out)`, which reads one byte once
// and is false past the packet's iovecs. Each test is one parse_segment()
// makes too, on the same bytes; a byte the iovecs do not hold means they
// hold fewer than `len` bytes (every offset read is below vnet_len +
// kMinSegmentLen, which the caller checked), which parse_segment() refuses
// as well.
template <typename ByteAt>
inline bool peek_candidate(ByteAt byte_at, uint8_t vnet_len, bool tcp, bool udp) {
    uint8_t flags = 0;
    uint8_t gso_type = 0;
    if (!byte_at(virtio::kNetHeaderFlagsOffset, flags) ||
        !byte_at(virtio::kNetHeaderGsoTypeOffset, gso_type) || gso_type != NetHeader::kGsoNone ||
        (flags != NetHeader::kFlagNeedsCsum && flags != NetHeader::kFlagDataValid)) {
        return false;
    }
    const size_t l3 = size_t{vnet_len} + kEthHeaderLen;
    uint8_t type_hi = 0;
    uint8_t type_lo = 0;
    uint8_t version = 0;
    if (!byte_at(l3 - kEthHeaderLen + kEthTypeOffset, type_hi) ||
        !byte_at(l3 - kEthHeaderLen + kEthTypeOffset + 1, type_lo) || !byte_at(l3, version)) {
        return false;
    }
    const uint16_t ethertype = static_cast<uint16_t>(type_hi << 8 | type_lo);
    uint8_t proto = 0;
    if (ethertype == kEtherTypeIpv4) {
        if (version != kIpv4VersionIhl5 || !byte_at(l3 + kIpv4ProtoOffset, proto)) {
            return false;
        }
    } else if (ethertype == kEtherTypeIpv6) {
        if ((version >> 4) != 6 || !byte_at(l3 + kIpv6NextHeaderOffset, proto)) {
            return false;
        }
    } else {
        return false;
    }
    return proto == kIpProtoTcp ? tcp : proto == kIpProtoUdp && udp;
}

}  // namespace

bool may_be_segment(std::span<const iovec> iovs, uint32_t len, uint8_t vnet_len, bool tcp,
                    bool udp) {
    if (len < vnet_len + kMinSegmentLen) {
        return false;
    }
    // Through IPv4's protocol byte (IPv6's next header comes before it).
    const size_t window = size_t{vnet_len} + kEthHeaderLen + 10;
    static_assert(kEthHeaderLen + 10 <= kMinSegmentLen);
    if (!iovs.empty() && iovs[0].iov_len >= window) {
        // The usual case: header and frame in one buffer, read in place.
        const auto* p = static_cast<const uint8_t*>(iovs[0].iov_base);
        return peek_candidate(
            [p](size_t offset, uint8_t& out) {
                out = __atomic_load_n(p + offset, __ATOMIC_RELAXED);
                return true;
            },
            vnet_len, tcp, udp);
    }
    return peek_candidate(
        [iovs](size_t offset, uint8_t& out) { return peek_byte(iovs, offset, out); }, vnet_len, tcp,
        udp);
}

bool parse_segment(std::span<const iovec> iovs, uint32_t len, uint8_t vnet_len,
                   SegmentHeader& seg) {
    if (len < vnet_len + kMinSegmentLen || !iovecs_hold_exactly(iovs, len)) {
        return false;
    }
    const size_t copied =
        gather_prefix(iovs, seg.bytes.data(), std::min<size_t>(len, kMaxSegmentHeaderLen));
    const uint8_t* b = seg.bytes.data();

    // A frame that already is GSO, or whose checksum state a merged frame
    // cannot restore, is not a segment.
    const uint8_t flags = b[virtio::kNetHeaderFlagsOffset];
    if (b[virtio::kNetHeaderGsoTypeOffset] != NetHeader::kGsoNone ||
        (flags != NetHeader::kFlagNeedsCsum && flags != NetHeader::kFlagDataValid)) {
        return false;
    }

    // Plain Ethernet only: a VLAN tag or anything else moves the IP header.
    const size_t l3 = vnet_len + kEthHeaderLen;
    const uint8_t* ip = b + l3;
    const uint16_t ethertype = load_be16(b + vnet_len + kEthTypeOffset);
    const uint32_t ip_len =
        len - static_cast<uint32_t>(l3);  // the frame must end with the IP packet
    bool ipv4 = false;
    uint8_t proto = 0;
    size_t l3_len = 0;
    if (ethertype == kEtherTypeIpv4) {
        // RFC 791: ihl 5 only (options would need per-segment rules); the
        // total length must be the frame's (no padding, no lie); MF or a
        // fragment offset means a fragment; a bad header checksum would not
        // survive the recomputation a GSO split does.
        if (ip[0] != kIpv4VersionIhl5 || load_be16(ip + kIpv4TotalLenOffset) != ip_len ||
            (load_be16(ip + kIpv4FragOffset) & (kIpv4MoreFragments | kIpv4FragmentOffsetMask)) !=
                0 ||
            checksum_fold(checksum_add(0, ip, kIpv4HeaderLen)) != 0xffff) {
            return false;
        }
        ipv4 = true;
        proto = ip[kIpv4ProtoOffset];
        l3_len = kIpv4HeaderLen;
    } else if (ethertype == kEtherTypeIpv6) {
        // RFC 8200: the transport header must follow directly (no extension
        // headers); payload length must match the frame.
        if (ip_len < kIpv6HeaderLen + kUdpHeaderLen + 1 || (ip[0] >> 4) != 6 ||
            load_be16(ip + kIpv6PayloadLenOffset) != ip_len - kIpv6HeaderLen) {
            return false;
        }
        proto = ip[kIpv6NextHeaderOffset];
        l3_len = kIpv6HeaderLen;
    } else {
        return false;
    }

    const size_t l4 = l3 + l3_len;
    const uint8_t* th = b + l4;
    const uint32_t l4_len = ip_len - static_cast<uint32_t>(l3_len);
    size_t l4_header_len = 0;
    size_t check_offset = 0;
    if (proto == kIpProtoTcp) {
        if (l4_len < kTcpMinHeaderLen) {
            return false;
        }
        // Past this check `len` covers l4 + l4_header_len + 1, so the copy
        // (kMaxSegmentHeaderLen leaves room for 60 TCP header bytes) does too.
        l4_header_len = static_cast<size_t>(th[kTcpDataOffsetOffset] >> 4) * 4;
        if (l4_header_len < kTcpMinHeaderLen || l4_header_len >= l4_len ||
            (th[kTcpFlagsOffset] & kTcpUnmergeableFlags) != 0) {
            return false;
        }
        check_offset = kTcpCheckOffset;
        seg.kind = ipv4 ? SegmentKind::tcp_v4 : SegmentKind::tcp_v6;
        seg.tcp_seq = load_be32(th + kTcpSeqOffset);
        seg.push = (th[kTcpFlagsOffset] & kTcpPsh) != 0;
    } else if (proto == kIpProtoUdp) {
        l4_header_len = kUdpHeaderLen;
        // A zero check with DATA_VALID means "no checksum" (IPv4); the merged
        // frame would gain one, so it is not the same packet.
        if (load_be16(th + kUdpLenOffset) != l4_len ||
            (flags == NetHeader::kFlagDataValid && load_be16(th + kUdpCheckOffset) == 0)) {
            return false;
        }
        check_offset = kUdpCheckOffset;
        seg.kind = ipv4 ? SegmentKind::udp_v4 : SegmentKind::udp_v6;
        seg.push = false;
    } else {
        return false;
    }
    if (copied < l4 + l4_header_len) {
        return false;  // unreachable given the checks above; keeps the copy bound local
    }

    if (flags == NetHeader::kFlagNeedsCsum) {
        // virtio 1.2 §5.1.6.2: the device checksums from csum_start and
        // stores at csum_start + csum_offset; only the L4 checksum, seeded
        // with the pseudo-header sum for this length, is what a GSO split
        // gives each segment back.
        if (load_le16(b + virtio::kNetHeaderCsumStartOffset) != l4 - vnet_len ||
            load_le16(b + virtio::kNetHeaderCsumOffsetOffset) != check_offset ||
            load_be16(th + check_offset) != pseudo_header_sum(ip, ipv4, proto, l4_len)) {
            return false;
        }
    }

    seg.vnet_len = vnet_len;
    seg.l3_offset = static_cast<uint8_t>(l3);
    seg.l4_offset = static_cast<uint8_t>(l4);
    seg.header_len = static_cast<uint8_t>(l4 + l4_header_len);
    seg.payload_len = static_cast<uint16_t>(l4_len - l4_header_len);
    seg.ip_id = ipv4 ? load_be16(ip + kIpv4IdOffset) : 0;
    return true;
}

bool same_flow_and_shape(const SegmentHeader& head, const SegmentHeader& next) {
    if (next.kind != head.kind || next.header_len != head.header_len ||
        next.bytes[virtio::kNetHeaderFlagsOffset] != head.bytes[virtio::kNetHeaderFlagsOffset]) {
        return false;
    }
    const size_t l3 = head.l3_offset;
    const size_t l4 = head.l4_offset;
    // Ethernet dst, src, type.
    if (!equal_range(head, next, head.vnet_len, l3)) {
        return false;
    }
    if (is_ipv4(head.kind)) {
        // version/ihl + TOS; frag_off (DF) + TTL + protocol; addresses.
        // tot_len, ID and checksum change per segment.
        if (!equal_range(head, next, l3, l3 + 2) || !equal_range(head, next, l3 + 6, l3 + 10) ||
            !equal_range(head, next, l3 + 12, l3 + 20)) {
            return false;
        }
    } else {
        // version, traffic class, flow label; next header, hop limit,
        // addresses. payload_len changes per segment.
        if (!equal_range(head, next, l3, l3 + 4) || !equal_range(head, next, l3 + 6, l3 + 40)) {
            return false;
        }
    }
    if (!is_tcp(head.kind)) {
        return equal_range(head, next, l4, l4 + 4);  // ports; length and check change
    }
    // Ports; ack; data offset; flags except PSH (a GSO split puts the
    // frame's PSH on the last segment only); window; urgent pointer and
    // every option byte (a split copies them to each segment).
    return equal_range(head, next, l4, l4 + 4) && equal_range(head, next, l4 + 8, l4 + 13) &&
           (head.bytes[l4 + 13] & ~kTcpPsh) == (next.bytes[l4 + 13] & ~kTcpPsh) &&
           equal_range(head, next, l4 + 14, l4 + 16) &&
           equal_range(head, next, l4 + 18, head.header_len);
}

}  // namespace vnet::gro
