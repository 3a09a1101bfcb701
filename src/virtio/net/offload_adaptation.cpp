#include "virtio/net/offload_adaptation.hpp"

#include <algorithm>
#include <cstring>

#include "packet/byte_order.hpp"
#include "packet/internet_checksum.hpp"
#include "packet/streaming_copy.hpp"
#include "packet/wire.hpp"

namespace vnet::virtio {

namespace {

using namespace packet;  // byte order, checksum, iovecs, wire offsets

// A computed checksum of 0 is stored as its one's-complement twin 0xffff:
// for UDP 0 means "no checksum" (RFC 768), and the kernel's
// skb_checksum_help stores CSUM_MANGLED_0 for any protocol.
uint16_t stored_checksum(uint32_t sum) {
    const uint16_t c = checksum_finish(sum);
    return c == 0 ? 0xffff : c;
}

void write_net_header(uint8_t* out, uint8_t flags, uint8_t gso_type, uint16_t hdr_len,
                      uint16_t gso_size, uint16_t csum_start, uint16_t csum_offset) {
    out[kNetHeaderFlagsOffset] = flags;
    out[kNetHeaderGsoTypeOffset] = gso_type;
    store_le16(out + kNetHeaderHdrLenOffset, hdr_len);
    store_le16(out + kNetHeaderGsoSizeOffset, gso_size);
    store_le16(out + kNetHeaderCsumStartOffset, csum_start);
    store_le16(out + kNetHeaderCsumOffsetOffset, csum_offset);
    store_le16(out + kNetHeaderNumBuffersOffset, 1);  // NetRxQueue writes the real count
}

// A frame of tens of KB (only a GSO frame is that long) goes to the
// receiver's CPU with streaming stores: packet/streaming_copy.hpp says why.
size_t copy_frame(std::span<const iovec> dst, std::span<const iovec> src, size_t len,
                  bool streaming) {
    return streaming ? copy_iovecs_streaming(dst, src, len) : copy_iovecs(dst, src, len);
}

bool is_tcp(uint8_t gso_type) {
    return gso_type == NetHeader::kGsoTcpV4 || gso_type == NetHeader::kGsoTcpV6;
}

}  // namespace

ReceiverOffloads receiver_offloads(FeatureSet negotiated) {
    ReceiverOffloads r;
    r.header_size = static_cast<uint32_t>(net_header_size(negotiated));
    r.mergeable = negotiated.has(Feature::net_mrg_rxbuf);
    r.csum = negotiated.has(Feature::net_guest_csum);
    if (r.csum) {
        r.tso4 = negotiated.has(Feature::net_guest_tso4);
        r.tso6 = negotiated.has(Feature::net_guest_tso6);
        r.tso_ecn = (r.tso4 || r.tso6) && negotiated.has(Feature::net_guest_ecn);
        r.ufo = negotiated.has(Feature::net_guest_ufo);
        r.uso4 = negotiated.has(Feature::net_guest_uso4);
        r.uso6 = negotiated.has(Feature::net_guest_uso6);
    }
    return r;
}

// ---- deciding ---------------------------------------------------------------------

const DeliveryPlan& OffloadAdaptation::plan_any(std::span<const iovec> packet, uint32_t packet_len,
                                                uint32_t sender_header_size) {
    // Copied from a constant, not built as a temporary: GCC assembles
    // `DeliveryPlan{}` on the stack with overlapping stores and reads it
    // back at once, a store-forwarding stall that was most of this
    // function's time per packet on the switch path.
    static constexpr DeliveryPlan kFreshPlan{};
    plan_ = kFreshPlan;
    plan_is_plain_ = false;
    plan_.sender_header_size = sender_header_size;
    // The first 10 bytes are the header proper; num_buffers (12) means
    // nothing on TX, and a longer tap header (hash report) is skipped.
    uint8_t h[kLegacyNetHeaderSize];
    if (sender_header_size < kLegacyNetHeaderSize || packet_len < sender_header_size ||
        total_length(packet) < packet_len || gather_prefix(packet, h, sizeof h) < sizeof h) {
        drop(DropReason::packet_too_short);
        return plan_;
    }
    plan_.frame_len = packet_len - sender_header_size;
    plan_.how = Delivery::whole;  // until a check below says otherwise

    const bool needs_csum = (h[kNetHeaderFlagsOffset] & NetHeader::kFlagNeedsCsum) != 0;
    if (load_le16(h + kNetHeaderHdrLenOffset) > plan_.frame_len) {
        drop(DropReason::bad_gso_header);  // tun_get_user: hdr_len > len is EINVAL
        return plan_;
    }
    if (needs_csum) {
        plan_.csum_start = load_le16(h + kNetHeaderCsumStartOffset);
        plan_.csum_offset = load_le16(h + kNetHeaderCsumOffsetOffset);
        // virtio 1.2 §5.1.6.2: the checksum goes at csum_start + csum_offset,
        // over the bytes from csum_start: both inside the frame.
        if (uint32_t{plan_.csum_start} + plan_.csum_offset + 2 > plan_.frame_len) {
            drop(DropReason::bad_checksum_offsets);
            return plan_;
        }
    }
    if (h[kNetHeaderGsoTypeOffset] != NetHeader::kGsoNone) {
        // Only a GSO frame's headers are parsed: a private copy, which also
        // serves as every segment's template.
        const uint32_t have = std::min(plan_.frame_len, kMaxFrameHeaders);
        const int pieces = slice_iovecs(packet, sender_header_size, have, source_slice_);
        if (pieces < 0) {
            drop(DropReason::too_many_segments);  // more pieces than a burst holds
            return plan_;
        }
        gather_prefix({source_slice_.data(), static_cast<size_t>(pieces)}, headers_.data(), have);
        plan_gso(h, have);
        if (plan_.how == Delivery::drop || plan_.gso) {
            return plan_;
        }
        // A frame no longer than one segment: not really GSO (the kernel's
        // virtio_net_hdr_to_skb clears gso_size for it), sent as it is.
    }
    // A plain frame. The sender's DATA_VALID is not passed on: a driver may
    // not set it on TX (virtio 1.2 §5.1.6.2) and the kernel ignores it there.
    const bool keep_partial = needs_csum && receiver_.csum;
    write_net_header(plan_.header.data(), keep_partial ? NetHeader::kFlagNeedsCsum : 0,
                     NetHeader::kGsoNone, 0, 0, keep_partial ? plan_.csum_start : 0,
                     keep_partial ? plan_.csum_offset : 0);
    plan_.complete_checksum = needs_csum && !receiver_.csum;
    plan_.how = Delivery::whole;
    return plan_;
}

// Parses the frame headers of a GSO frame (the private copy, `have` bytes)
// against its header, as virtio_net_hdr_to_skb and the GSO callbacks check
// them. Leaves plan_.gso false for a frame that fits one segment.
void OffloadAdaptation::plan_gso(const uint8_t* h, uint32_t have) {
    const uint8_t type = h[kNetHeaderGsoTypeOffset] & ~NetHeader::kGsoEcn;
    const bool ecn = (h[kNetHeaderGsoTypeOffset] & NetHeader::kGsoEcn) != 0;
    const bool needs_csum = (h[kNetHeaderFlagsOffset] & NetHeader::kFlagNeedsCsum) != 0;
    const uint16_t gso_size = load_le16(h + kNetHeaderGsoSizeOffset);
    const bool known = is_tcp(type) || type == NetHeader::kGsoUdp || type == NetHeader::kGsoUdpL4;
    if (!known || gso_size == 0 || (ecn && !is_tcp(type))) {
        drop(DropReason::bad_gso_header);
        return;
    }
    const uint8_t* f = headers_.data();
    uint32_t l3 = kEthHeaderLen;
    if (have < l3) {
        drop(DropReason::bad_gso_header);
        return;
    }
    uint16_t ethertype = load_be16(f + kEthTypeOffset);
    if (ethertype == kEtherTypeVlan) {
        if (have < l3 + kVlanTagLen) {
            drop(DropReason::bad_gso_header);
            return;
        }
        ethertype = load_be16(f + kEthTypeOffset + kVlanTagLen);
        l3 += kVlanTagLen;
        if (ethertype == kEtherTypeVlan || ethertype == 0x88a8) {
            drop(DropReason::gso_unsupported);  // stacked tags
            return;
        }
    }
    uint32_t l4 = 0;
    uint8_t proto = 0;
    if (ethertype == kEtherTypeIpv4) {
        const uint32_t ihl = (f[l3] & 0x0fu) * 4u;
        if (have < l3 + kIpv4HeaderLen || (f[l3] >> 4) != 4 || ihl < kIpv4HeaderLen ||
            have < l3 + ihl ||
            (load_be16(f + l3 + kIpv4FragOffset) &
             (kIpv4MoreFragments | kIpv4FragmentOffsetMask))) {
            drop(DropReason::bad_gso_header);  // not one whole IPv4 datagram
            return;
        }
        plan_.ipv4 = true;
        proto = f[l3 + kIpv4ProtoOffset];
        l4 = l3 + ihl;
    } else if (ethertype == kEtherTypeIpv6) {
        if (have < l3 + kIpv6HeaderLen || (f[l3] >> 4) != 6) {
            drop(DropReason::bad_gso_header);
            return;
        }
        proto = f[l3 + kIpv6NextHeaderOffset];
        l4 = l3 + kIpv6HeaderLen;
        if (proto != kIpProtoTcp && proto != kIpProtoUdp) {
            drop(DropReason::gso_unsupported);  // extension headers
            return;
        }
    } else {
        drop(DropReason::bad_gso_header);
        return;
    }
    const bool tcp = is_tcp(type);
    if ((tcp && proto != kIpProtoTcp) || (!tcp && proto != kIpProtoUdp) ||
        (type == NetHeader::kGsoTcpV4 && !plan_.ipv4) ||
        (type == NetHeader::kGsoTcpV6 && plan_.ipv4)) {
        drop(DropReason::bad_gso_header);  // the headers are not what gso_type says
        return;
    }
    uint32_t l4_header = kUdpHeaderLen;
    if (tcp) {
        l4_header = (have < l4 + kTcpMinHeaderLen) ? 0 : (f[l4 + kTcpDataOffsetOffset] >> 4) * 4u;
        if (l4_header < kTcpMinHeaderLen) {
            drop(DropReason::bad_gso_header);
            return;
        }
    }
    if (have < l4 + l4_header) {
        drop(DropReason::bad_gso_header);
        return;
    }
    if (needs_csum && type != NetHeader::kGsoUdp &&
        (plan_.csum_start != l4 ||
         plan_.csum_offset != (tcp ? kTcpCheckOffset : kUdpCheckOffset))) {
        // virtio_net_hdr_to_skb: TCP and UDP_L4 GSO checksum at the L4 check field.
        drop(DropReason::bad_checksum_offsets);
        return;
    }
    if (type == NetHeader::kGsoUdpL4 && !needs_csum) {
        drop(DropReason::bad_gso_header);  // virtio_net_hdr_to_skb: UDP_L4 needs NEEDS_CSUM
        return;
    }
    // UFO cuts the datagram into IP fragments: what is split is the L4
    // bytes, UDP header included, behind each fragment's own IP header.
    const bool ufo = type == NetHeader::kGsoUdp;
    const uint32_t headers_len = ufo ? l4 : l4 + l4_header;
    const uint32_t payload = plan_.frame_len - headers_len;
    if (payload <= gso_size) {
        return;  // fits one segment: a plain frame
    }
    const uint32_t segments = (payload + gso_size - 1) / gso_size;
    const uint32_t max_segments = tcp                            ? kMaxTcpSegments
                                  : type == NetHeader::kGsoUdpL4 ? kMaxUdpSegments
                                                                 : 0xffff;
    if (segments > max_segments || (ufo && (gso_size % 8 != 0 || plan_.frame_len - l3 > 0xffff))) {
        // Too many segments, or fragments that IPv4 cannot number (offsets
        // count 8-byte units; the datagram must fit the total length).
        drop(DropReason::bad_gso_header);
        return;
    }
    plan_.gso = true;
    plan_.gso_type = type;
    plan_.ecn = ecn;
    plan_.l3_offset = static_cast<uint16_t>(l3);
    plan_.l4_offset = static_cast<uint16_t>(l4);
    plan_.headers_len = static_cast<uint16_t>(headers_len);
    plan_.gso_size = gso_size;
    plan_.segment_count = static_cast<uint16_t>(segments);
    plan_.payload_len = payload;
    decide_gso();
    if (plan_.how == Delivery::whole) {
        // Passed on as it came, with the real header length (hdr_len is a
        // hint the receiver's kernel trusts to pull headers).
        write_net_header(plan_.header.data(), needs_csum ? NetHeader::kFlagNeedsCsum : 0,
                         h[kNetHeaderGsoTypeOffset],
                         static_cast<uint16_t>(ufo ? l4 + kUdpHeaderLen : headers_len), gso_size,
                         plan_.csum_start, plan_.csum_offset);
    }
}

// Whole if the receiver takes this GSO type, else segmented here.
void OffloadAdaptation::decide_gso() {
    const ReceiverOffloads& r = receiver_;
    bool takes = false;
    switch (plan_.gso_type) {
        case NetHeader::kGsoTcpV4:
            takes = r.tso4;
            break;
        case NetHeader::kGsoTcpV6:
            takes = r.tso6;
            break;
        case NetHeader::kGsoUdpL4:
            takes = plan_.ipv4 ? r.uso4 : r.uso6;
            break;
        default:
            takes = r.ufo;
            break;
    }
    if (plan_.ecn && !r.tso_ecn) {
        takes = false;  // NETIF_F_TSO_ECN: CWR may only be on the first segment
    }
    plan_.how = takes ? Delivery::whole : Delivery::segments;
    if (plan_.how == Delivery::segments && plan_.gso_type == NetHeader::kGsoUdp && !plan_.ipv4) {
        drop(DropReason::gso_unsupported);  // IPv6 UFO needs a fragment header inserted
        return;
    }
    // Segments keep a partial checksum for a receiver that takes one, as the
    // kernel's software GSO leaves CHECKSUM_PARTIAL for a device with
    // NETIF_F_HW_CSUM; UFO fragments cannot (the checksum covers them all).
    plan_.partial_segments = r.csum && plan_.gso_type != NetHeader::kGsoUdp;
}

// ---- writing ----------------------------------------------------------------------

uint32_t OffloadAdaptation::segment_len(uint16_t i) const {
    const uint32_t offset = uint32_t{i} * plan_.gso_size;
    const uint32_t n = std::min<uint32_t>(plan_.gso_size, plan_.payload_len - offset);
    return receiver_.header_size + plan_.headers_len + n;
}

uint16_t OffloadAdaptation::complete_checksum_in(std::span<const iovec> buffer, uint32_t from,
                                                 uint32_t len, uint32_t sum) {
    const int pieces = slice_iovecs(buffer, from, len, buffer_slice_);
    if (pieces < 0) {
        return 0;
    }
    return checksum_add_iovecs(sum, {buffer_slice_.data(), static_cast<size_t>(pieces)});
}

uint32_t OffloadAdaptation::write_whole_any(std::span<const iovec> packet,
                                            std::span<const iovec> buffer) {
    const uint32_t len = whole_len();
    const uint32_t rx_header = receiver_.header_size;
    const auto available = static_cast<uint32_t>(std::min<size_t>(total_length(buffer), len));
    if (available < len) {
        return available;  // a truncated packet: the receive queue drops and counts it
    }
    const bool streaming = streaming_stores_ && len >= kStreamingCopyMinFrame;
    if (plan_.sender_header_size == rx_header) {
        // The common case: one pass over the packet, then the header
        // rewritten in place.
        copy_frame(buffer, packet, len, streaming);
    } else {
        const int src =
            slice_iovecs(packet, plan_.sender_header_size, plan_.frame_len, source_slice_);
        const int dst = slice_iovecs(buffer, rx_header, plan_.frame_len, buffer_slice_);
        if (src < 0 || dst < 0) {
            return 0;  // more pieces than a burst or an RX window holds: cannot happen
        }
        copy_frame({buffer_slice_.data(), static_cast<size_t>(dst)},
                   {source_slice_.data(), static_cast<size_t>(src)}, plan_.frame_len, streaming);
    }
    scatter_at(buffer, 0, plan_.header.data(), rx_header);
    if (plan_.complete_checksum) {
        // skb_checksum_help: the check field holds the pseudo-header sum;
        // sum from csum_start to the end and store the complement. Summed
        // over what the receiver got, whatever the sender did meanwhile.
        const uint32_t from = rx_header + plan_.csum_start;
        uint8_t check[2];
        store_be16(check, stored_checksum(complete_checksum_in(
                              buffer, from, plan_.frame_len - plan_.csum_start, 0)));
        scatter_at(buffer, from + plan_.csum_offset, check, sizeof check);
    }
    return len;
}

uint32_t OffloadAdaptation::write_segment(uint16_t i, std::span<const iovec> packet,
                                          std::span<const iovec> buffer) {
    const uint32_t len = segment_len(i);
    const auto available = static_cast<uint32_t>(std::min<size_t>(total_length(buffer), len));
    if (available < len) {
        return available;  // a truncated packet: the receive queue drops and counts it
    }
    const DeliveryPlan& p = plan_;
    const uint32_t rx_header = receiver_.header_size;
    const uint32_t offset = uint32_t{i} * p.gso_size;
    const uint32_t n = len - rx_header - p.headers_len;

    // The payload first, straight from the sender to the receiver.
    const int src =
        slice_iovecs(packet, p.sender_header_size + p.headers_len + offset, n, source_slice_);
    const int dst = slice_iovecs(buffer, rx_header + p.headers_len, n, buffer_slice_);
    if (src < 0 || dst < 0) {
        return 0;
    }
    copy_iovecs({buffer_slice_.data(), static_cast<size_t>(dst)},
                {source_slice_.data(), static_cast<size_t>(src)}, n);

    if (p.gso_type == NetHeader::kGsoUdp && i == 0) {
        // UFO: the UDP checksum covers the whole datagram, so it is computed
        // over the sender's (udp4_ufo_fragment) and only the first fragment,
        // which carries the UDP header in its payload, is patched.
        uint8_t udp[kUdpHeaderLen];
        const uint32_t udp_len = p.frame_len - p.l4_offset;
        std::memcpy(udp, headers_.data() + p.l4_offset, sizeof udp);
        store_be16(udp + kUdpLenOffset, static_cast<uint16_t>(udp_len));
        store_be16(udp + kUdpCheckOffset, 0);
        const int all = slice_iovecs(packet, p.sender_header_size + p.l4_offset + kUdpHeaderLen,
                                     udp_len - kUdpHeaderLen, source_slice_);
        if (all < 0) {
            return 0;
        }
        uint32_t sum = pseudo_header_sum(headers_.data() + p.l3_offset, true, kIpProtoUdp, udp_len);
        sum = checksum_add(sum, udp, sizeof udp);
        sum = checksum_add_iovecs(sum, {source_slice_.data(), static_cast<size_t>(all)});
        store_be16(udp + kUdpCheckOffset, stored_checksum(sum));
        scatter_at({buffer_slice_.data(), static_cast<size_t>(dst)}, 0, udp, sizeof udp);
    }
    // The checksum is taken over the copy: what the receiver got.
    build_segment_headers(i, n, {buffer_slice_.data(), static_cast<size_t>(dst)});
    scatter_at(buffer, 0, segment_headers_.data(), rx_header + p.headers_len);
    return len;
}

int OffloadAdaptation::segment_by_reference(uint16_t i, std::span<const iovec> packet,
                                            std::span<iovec> payload) {
    const DeliveryPlan& p = plan_;
    if (p.how != Delivery::segments || p.gso_type == NetHeader::kGsoUdp || i >= p.segment_count) {
        return -1;
    }
    const uint32_t offset = uint32_t{i} * p.gso_size;
    const uint32_t n = std::min<uint32_t>(p.gso_size, p.payload_len - offset);
    const int src = slice_iovecs(packet, p.sender_header_size + p.headers_len + offset, n, payload);
    if (src < 0) {
        return -1;
    }
    build_segment_headers(i, n, payload.first(static_cast<size_t>(src)));
    return src;
}

void OffloadAdaptation::build_segment_headers(uint16_t i, uint32_t n,
                                              std::span<const iovec> payload) {
    // The headers, from the sender's, as tcp_gso_segment, __udp_gso_segment
    // and inet_gso_segment rewrite them.
    const DeliveryPlan& p = plan_;
    const uint32_t rx_header = receiver_.header_size;
    const uint32_t offset = uint32_t{i} * p.gso_size;
    const bool last = i + 1 == p.segment_count;
    const bool tcp = is_tcp(p.gso_type);
    const bool ufo = p.gso_type == NetHeader::kGsoUdp;
    uint8_t* frame = segment_headers_.data() + rx_header;
    std::memcpy(frame, headers_.data(), p.headers_len);
    uint8_t* l3 = frame + p.l3_offset;
    const uint32_t l3_len = p.headers_len - p.l3_offset + n;
    if (p.ipv4) {
        store_be16(l3 + kIpv4TotalLenOffset, static_cast<uint16_t>(l3_len));
        store_be16(l3 + kIpv4IdOffset, static_cast<uint16_t>(load_be16(l3 + kIpv4IdOffset) + i));
        if (ufo) {
            const uint16_t df = load_be16(l3 + kIpv4FragOffset) & kIpv4DontFragment;
            store_be16(l3 + kIpv4FragOffset,
                       static_cast<uint16_t>(df | (offset >> 3) | (last ? 0 : kIpv4MoreFragments)));
        }
        store_be16(l3 + kIpv4CheckOffset, 0);
        const uint32_t ihl = p.l4_offset - p.l3_offset;
        store_be16(l3 + kIpv4CheckOffset, checksum_finish(checksum_add(0, l3, ihl)));
    } else {
        store_be16(l3 + kIpv6PayloadLenOffset, static_cast<uint16_t>(l3_len - kIpv6HeaderLen));
    }

    uint8_t flags = 0;
    uint16_t csum_start = 0;
    uint16_t csum_offset = 0;
    if (ufo) {
        // The kernel marks the fragments CHECKSUM_UNNECESSARY, which tun
        // reports as DATA_VALID.
        flags = receiver_.csum ? NetHeader::kFlagDataValid : 0;
    } else {
        uint8_t* l4 = frame + p.l4_offset;
        const uint32_t l4_len = p.headers_len - p.l4_offset + n;
        const uint32_t check_at = tcp ? kTcpCheckOffset : kUdpCheckOffset;
        if (tcp) {
            store_be32(l4 + kTcpSeqOffset, load_be32(l4 + kTcpSeqOffset) + offset);
            uint8_t tcp_flags = l4[kTcpFlagsOffset];
            if (!last) {
                tcp_flags &= static_cast<uint8_t>(~(kTcpFin | kTcpPsh));
            }
            if (i != 0) {
                tcp_flags &= static_cast<uint8_t>(~kTcpCwr);
            }
            l4[kTcpFlagsOffset] = tcp_flags;
        } else {
            store_be16(l4 + kUdpLenOffset, static_cast<uint16_t>(l4_len));
        }
        const uint16_t pseudo =
            pseudo_header_sum(l3, p.ipv4, tcp ? kIpProtoTcp : kIpProtoUdp, l4_len);
        if (p.partial_segments) {
            store_be16(l4 + check_at, pseudo);  // what NEEDS_CSUM means
            flags = NetHeader::kFlagNeedsCsum;
            csum_start = p.l4_offset;
            csum_offset = static_cast<uint16_t>(check_at);
        } else {
            store_be16(l4 + check_at, 0);
            const uint32_t header_sum = checksum_add(pseudo, l4, p.headers_len - p.l4_offset);
            store_be16(l4 + check_at, stored_checksum(checksum_add_iovecs(header_sum, payload)));
        }
    }
    // The receiver's header size only: a 10-byte one has no num_buffers.
    uint8_t net_header[sizeof(NetHeader)];
    write_net_header(net_header, flags, NetHeader::kGsoNone, 0, 0, csum_start, csum_offset);
    std::memcpy(segment_headers_.data(), net_header, rx_header);
}

}  // namespace vnet::virtio
