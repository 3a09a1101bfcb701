// Offload adaptation between two guests: a packet taken from one guest's TX
// ring (its virtio-net header and frame, iovecs into its memory) made fit
// for what another guest negotiated on its RX ring, and written straight
// into that guest's RX buffers (the one copy of a VM -> VM hop).
//
//  * A GSO frame goes whole when the receiver negotiated the matching
//    GUEST_TSO4/TSO6/ECN/UFO/USO4/USO6 (each with GUEST_CSUM) and can hold
//    it (MRG_RXBUF, or a buffer big enough); otherwise it is segmented here
//    as the kernel's software GSO does (tcp_gso_segment, __udp_gso_segment,
//    udp4_ufo_fragment): each segment's headers are built in place in the
//    receiver's buffer and its payload copied once from the sender.
//  * A partial checksum (NEEDS_CSUM) stays partial for a GUEST_CSUM
//    receiver and is completed here for one without (virtio 1.2 §5.1.6.4.1:
//    then flags must be 0 and the packet fully checksummed).
//  * 10- and 12-byte headers are translated; num_buffers is the receiver's
//    (NetRxQueue writes it at commit).
//
// The sender is hostile: its header and frame headers are parsed from a
// private copy (it may rewrite its memory meanwhile), and a header that does
// not fit its frame is a counted drop with a named reason, never a crash.
// Pure: no syscalls, no allocation after construction (the scratch is sized
// once), no logging.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "packet/packet_burst.hpp"
#include "packet/queue_counters.hpp"
#include "packet/streaming_copy.hpp"
#include "virtio/features.hpp"
#include "virtio/net_header.hpp"

namespace vnet::virtio {

// What the receiving guest negotiated that decides how a frame reaches it.
// A GSO offload counts only with GUEST_CSUM (virtio 1.2 §5.1.3.1: each
// depends on it), as the tap's offloads do (tun_offloads_for_guest).
struct ReceiverOffloads {
    uint32_t header_size = sizeof(NetHeader);
    bool mergeable = false;  // MRG_RXBUF: a frame may span buffers
    bool csum = false;       // GUEST_CSUM: partial checksums accepted
    bool tso4 = false;
    bool tso6 = false;
    bool tso_ecn = false;  // GUEST_ECN: TCP GSO frames with the ECN bit
    bool ufo = false;
    bool uso4 = false;
    bool uso6 = false;
};
ReceiverOffloads receiver_offloads(FeatureSet negotiated);

// The kernel's UDP_MAX_SEGMENTS: the most datagrams one USO frame may carry.
inline constexpr uint16_t kMaxUdpSegments = 128;
// The most TCP segments vnetd cuts one frame into: 64 KiB at the smallest
// MSS Linux uses by default (tcp_min_snd_mss 48) needs 1366; a frame that
// needs more is refused rather than multiplied into tiny packets.
inline constexpr uint16_t kMaxTcpSegments = 1400;
// Ethernet + one VLAN tag + IPv4 with options (60) + TCP with options (60).
inline constexpr uint32_t kMaxFrameHeaders = 14 + 4 + 60 + 60;

enum class Delivery : uint8_t {
    whole,     // one packet, header translated (and the checksum completed)
    segments,  // segment_count packets, cut in software
    drop,      // drop_reason says why
};

// What the parse of one packet decided. Offsets are from the start of the
// frame (after the sender's virtio-net header).
struct DeliveryPlan {
    Delivery how = Delivery::drop;
    packet::DropReason drop_reason = packet::DropReason::bad_gso_header;
    uint32_t sender_header_size = 0;
    uint32_t frame_len = 0;
    // Delivery::whole: the receiver's header (its first header_size bytes),
    // and whether the sender's partial checksum is filled in on the way.
    std::array<uint8_t, sizeof(NetHeader)> header{};
    bool complete_checksum = false;
    uint16_t csum_start = 0;
    uint16_t csum_offset = 0;
    // A GSO frame (whole or not): what segmenting it needs.
    bool gso = false;
    uint8_t gso_type = NetHeader::kGsoNone;  // without the ECN bit
    bool ecn = false;                        // the sender's type had it
    bool ipv4 = false;
    uint16_t l3_offset = 0;
    uint16_t l4_offset = 0;
    uint16_t headers_len = 0;  // Ethernet to the end of the L4 header
    uint16_t gso_size = 0;
    uint16_t segment_count = 0;
    uint32_t payload_len = 0;       // after headers_len
    bool partial_segments = false;  // the receiver takes NEEDS_CSUM segments
};

// A plain frame's plan but for its two lengths: whole, the receiver's
// header all zero but num_buffers (1 until NetRxQueue writes it).
inline constexpr DeliveryPlan kPlainWholePlan = [] {
    DeliveryPlan p;
    p.how = Delivery::whole;
    p.header[kNetHeaderNumBuffersOffset] = 1;
    return p;
}();

class OffloadAdaptation {
public:
    // The receiver's header is 10 or 12 bytes (virtio 1.2 §5.1.6).
    void set_receiver(const ReceiverOffloads& receiver) {
        receiver_ = receiver;
        receiver_.header_size = receiver.header_size == kLegacyNetHeaderSize
                                    ? static_cast<uint32_t>(kLegacyNetHeaderSize)
                                    : static_cast<uint32_t>(sizeof(NetHeader));
    }
    const ReceiverOffloads& receiver() const { return receiver_; }
    // Whole frames of kStreamingCopyMinFrame bytes or more are written with
    // streaming stores (packet/streaming_copy.hpp); off: plain stores.
    void set_streaming_stores(bool on) { streaming_stores_ = on; }

    // Decides how the packet (the sender's `sender_header_size`-byte header,
    // then its frame; `packet_len` bytes in `packet`) reaches the receiver.
    // The plan stays valid until the next call.
    const DeliveryPlan& plan(std::span<const iovec> packet, uint32_t packet_len,
                             uint32_t sender_header_size) {
        // The common frame decided inline, from the same private copy of
        // the header: a plain one (no partial checksum, no GSO) whose header
        // lies in its first piece. Everything else takes plan_any.
        if (sender_header_size >= kLegacyNetHeaderSize && packet_len >= sender_header_size &&
            !packet.empty() && packet[0].iov_len >= kLegacyNetHeaderSize) [[likely]] {
            uint8_t h[kLegacyNetHeaderSize];
            std::memcpy(h, packet[0].iov_base, sizeof h);
            const uint32_t frame_len = packet_len - sender_header_size;
            if ((h[kNetHeaderFlagsOffset] & NetHeader::kFlagNeedsCsum) == 0 &&
                h[kNetHeaderGsoTypeOffset] == NetHeader::kGsoNone &&
                packet::load_le16(h + kNetHeaderHdrLenOffset) <= frame_len &&
                packet::holds_at_least(packet, packet_len)) {
                if (!plan_is_plain_) {
                    // The last packet's plan was another: the whole plain
                    // one written once, then only its two lengths per packet.
                    plan_ = kPlainWholePlan;
                    plan_is_plain_ = true;
                }
                plan_.sender_header_size = sender_header_size;
                plan_.frame_len = frame_len;
                return plan_;
            }
        }
        return plan_any(packet, packet_len, sender_header_size);
    }
    const DeliveryPlan& current() const { return plan_; }
    // The last plan was plan()'s inline one: a plain frame delivered whole.
    bool planned_plain() const { return plan_is_plain_; }
    // Segments instead of a whole GSO frame (a receiver without MRG_RXBUF
    // that posted a buffer too small for it).
    void fall_back_to_segments() {
        plan_.how = Delivery::segments;
        plan_is_plain_ = false;
    }

    // Bytes the receiver's buffer takes, its header included: the whole
    // packet, or segment `i`.
    uint32_t whole_len() const { return receiver_.header_size + plan_.frame_len; }
    uint32_t segment_len(uint16_t i) const;

    // Write the planned packet (or segment `i`) from the sender's `packet`
    // into `buffer`, which holds at least whole_len() / segment_len(i) bytes
    // unless a guest posted less (then nothing is written, and the receive
    // queue counts the truncation). Return the bytes written. Each side is
    // at most kMaxBurstIovecs pieces, as a burst and an RX window hold them.
    uint32_t write_whole(std::span<const iovec> packet, std::span<const iovec> buffer) {
        const uint32_t len = whole_len();
        const uint32_t rx_header = receiver_.header_size;
        if (!buffer.empty() && buffer[0].iov_len >= len && plan_.sender_header_size == rx_header &&
            !plan_.complete_checksum && len < packet::kStreamingCopyMinFrame) [[likely]] {
            // The common frame between guests, inline: the receiver's first
            // buffer piece holds all of it, so the frame after the header is
            // copied in one pass over the sender's pieces (a switched frame
            // comes as two, its header line and its payload) and the header
            // written once. Everything else takes write_whole_any.
            auto* out = static_cast<uint8_t*>(buffer[0].iov_base);
            packet::gather_at(packet, rx_header, out + rx_header, plan_.frame_len);
            if (rx_header == sizeof(NetHeader)) {
                std::memcpy(out, plan_.header.data(), sizeof(NetHeader));
            } else {
                std::memcpy(out, plan_.header.data(), kLegacyNetHeaderSize);
            }
            return len;
        }
        return write_whole_any(packet, buffer);
    }
    uint32_t write_segment(uint16_t i, std::span<const iovec> packet,
                           std::span<const iovec> buffer);
    // Segment `i` of a planned TCP or UDP (USO) split without copying it,
    // for a receiver that sends it on from the sender's memory (a VXLAN
    // socket): its payload described as slices of the sender's `packet`
    // in `payload`, its headers (the receiver's virtio-net header, then
    // the frame's, segment_headers_len() bytes) in segment_headers() until
    // the next call, with the checksum taken over those slices. Returns the
    // slices used; -1 when the plan is no such split (UFO, whose first
    // fragment carries the UDP header in its payload, takes write_segment)
    // or the slices do not fit in `payload`.
    int segment_by_reference(uint16_t i, std::span<const iovec> packet, std::span<iovec> payload);
    uint32_t segment_headers_len() const { return receiver_.header_size + plan_.headers_len; }
    const uint8_t* segment_headers() const { return segment_headers_.data(); }

private:
    const DeliveryPlan& plan_any(std::span<const iovec> packet, uint32_t packet_len,
                                 uint32_t sender_header_size);
    uint32_t write_whole_any(std::span<const iovec> packet, std::span<const iovec> buffer);
    void plan_gso(const uint8_t* sender_header, uint32_t have);
    void decide_gso();
    void drop(packet::DropReason reason) { plan_.how = Delivery::drop, plan_.drop_reason = reason; }
    uint16_t complete_checksum_in(std::span<const iovec> buffer, uint32_t from, uint32_t len,
                                  uint32_t sum);
    // Segment i's headers (n payload bytes, the L4 checksum over `payload`)
    // in segment_headers_, as tcp_gso_segment and inet_gso_segment write
    // them; UFO's first fragment's UDP header is its caller's.
    void build_segment_headers(uint16_t i, uint32_t n, std::span<const iovec> payload);

    ReceiverOffloads receiver_;
    bool streaming_stores_ = true;
    DeliveryPlan plan_;
    // plan_ is kPlainWholePlan but for its two lengths (plan's fast path
    // wrote it, and nothing changed it since).
    bool plan_is_plain_ = false;
    // The sender's frame headers, copied once per packet: parsed and used as
    // the template of every segment's headers.
    std::array<uint8_t, kMaxFrameHeaders> headers_{};
    // One segment's virtio-net header and frame headers, built here and
    // scattered into the receiver's buffer (a guest may split even the
    // header over tiny descriptors).
    std::array<uint8_t, sizeof(NetHeader) + kMaxFrameHeaders> segment_headers_{};
    // Slices of the sender's packet and the receiver's buffer per copy.
    std::array<iovec, packet::kMaxBurstIovecs> source_slice_{};
    std::array<iovec, packet::kMaxBurstIovecs> buffer_slice_{};
};

// How far deliver_adapted got with one packet.
struct AdaptedDelivery {
    bool finished = false;  // delivered or dropped (drop_reason set)
    bool dropped = false;
    packet::DropReason drop_reason = packet::DropReason::bad_gso_header;
    uint16_t next_segment = 0;  // !finished: where to resume once buffers come
};

// Delivers the packet `adaptation` planned into `rx` (NetRxQueue's
// next_buffer / commit_buffer), segments from `first_segment` on. Stops
// where the receiver has no more buffers: the caller resumes there later,
// so a frame is neither lost nor delivered twice.
template <typename Rx>
AdaptedDelivery deliver_adapted(OffloadAdaptation& adaptation, Rx& rx,
                                std::span<const iovec> packet, uint16_t first_segment) {
    const DeliveryPlan& plan = adaptation.current();
    AdaptedDelivery out;
    if (plan.how == Delivery::drop) {
        out.finished = out.dropped = true;
        out.drop_reason = plan.drop_reason;
        return out;
    }
    std::span<const iovec> buffer;
    if (plan.how == Delivery::whole && first_segment != 0) {
        adaptation.fall_back_to_segments();  // resuming a frame that was being segmented
    }
    if (plan.how == Delivery::whole) {
        const uint32_t len = adaptation.whole_len();
        if (!rx.next_buffer(len, &buffer)) {
            return out;
        }
        if (!plan.gso || adaptation.receiver().mergeable || packet::total_length(buffer) >= len) {
            rx.commit_buffer(adaptation.write_whole(packet, buffer));
            out.finished = true;
            return out;
        }
        // virtio 1.2 §5.1.6.3.1: without MRG_RXBUF a GSO receiver SHOULD post
        // 64 KiB buffers; one that did not still gets the data, segmented.
        adaptation.fall_back_to_segments();
    }
    for (uint16_t i = first_segment; i < plan.segment_count; ++i) {
        if (!rx.next_buffer(adaptation.segment_len(i), &buffer)) {
            out.next_segment = i;
            return out;
        }
        rx.commit_buffer(adaptation.write_segment(i, packet, buffer));
    }
    out.finished = true;
    return out;
}

}  // namespace vnet::virtio
