// User-space GRO over one TX burst: runs of consecutive segments of one
// TCP/UDP flow become one virtio-net GSO frame, so the tap takes one write
// (and the host stack one skb) where it would have taken up to 45. This is
// what tun's NAPI+GRO gave vhost-net in the kernel (DESIGN.md, "gro").
//
// Contract: the kernel's GSO split of a merged frame gives back the run's
// segments byte for byte (DATA_VALID segments: with their checksums
// completed instead of trusted). Anything not clearly mergeable passes
// through unchanged, never dropped.
//
// Zero copy: a merged frame is one iovec of rewritten headers (in this
// object's scratch) followed by slices of the segments' own iovecs, minus
// their headers. Frames therefore point into the caller's memory and stay
// valid as long as `in`'s buffers and this object (until the next coalesce).
//
// Iovec budget rule: a merged frame of n >= 2 segments uses at most one
// header iovec plus the segments' own iovecs, so `out` needs at most
// in.iovecs_used + in.count / 2 entries. A burst for which that exceeds
// packet::kMaxBurstIovecs is passed through whole (it already is near writev's
// UIO_MAXIOV limit, i.e. far from the small-packet case GRO is for).
#pragma once

#include <array>
#include <cstdint>

#include "gro/segment_header.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::gro {

struct CoalesceOptions {
    bool tcp = true;  // merge TCP segments into VIRTIO_NET_HDR_GSO_TCPV4/TCPV6 frames
    bool udp =
        false;  // merge UDP datagrams into GSO_UDP_L4 (USO) frames; only when the tap accepts USO
};

struct CoalesceResult {
    uint16_t frames = 0;           // frames written to `out`
    uint16_t merged_frames = 0;    // of which made of >= 2 segments
    uint32_t merged_segments = 0;  // input packets that went into merged frames
};

class BurstCoalescer {
public:
    // Builds `out` (cleared first) from `in`: runs of consecutive packets of one flow become one
    // GSO frame; everything else is copied through unchanged (same iovecs, same len, same token).
    // `vnet_header_size` is 10 or 12 (the virtio_net_hdr at the start of every packet); any other
    // value passes everything through. A merged frame carries its first segment's token.
    CoalesceResult coalesce(const packet::PacketBurst& in, uint16_t vnet_header_size,
                            const CoalesceOptions& options, packet::PacketBurst& out);
    // False when coalesce() could not merge anything in `in`: no two
    // consecutive packets pass may_be_segment() (or merging is off for this
    // header size or burst). Reads a few bytes per packet in place and
    // writes nothing, so the caller can send `in` as it is: a burst of
    // small UDP (gro_udp off) or offload-less frames costs a few loads per
    // packet instead of a header copy, two checksums and an iovec copy.
    static bool may_merge(const packet::PacketBurst& in, uint16_t vnet_header_size,
                          const CoalesceOptions& options);
    // How many packets of the last `in` the first `frames` frames of `out` cover (a tap may take
    // only a prefix of `out`; the caller completes that many source packets).
    uint16_t source_packets(uint16_t frames) const;

private:
    // The run being built: packets [first, first + count) of `in`, all
    // matching the head (headers_[head_]).
    struct Run {
        uint16_t first = 0;
        uint16_t count = 0;
        uint32_t payload_bytes = 0;
        uint32_t next_seq = 0;    // TCP: the seq the next segment must carry
        uint16_t next_ip_id = 0;  // IPv4: head ID + count (mod 2^16)
        bool last_push = false;
    };

    bool extends_run(const SegmentHeader& seg) const;
    void start_run(uint16_t index);
    void add_to_run(const SegmentHeader& seg);
    void flush_run(const packet::PacketBurst& in, packet::PacketBurst& out);
    void emit_merged(const packet::PacketBurst& in, packet::PacketBurst& out);
    void pass_through(const packet::PacketBurst& in, uint16_t index, packet::PacketBurst& out);
    void end_frame(uint16_t sources);

    // Two parse slots: the run head and the packet being looked at; starting
    // a run flips which is which instead of copying.
    std::array<SegmentHeader, 2> headers_{};
    uint8_t head_ = 0;
    Run run_{};
    CoalesceResult result_{};
    uint16_t sources_done_ = 0;
    std::array<uint16_t, packet::kMaxBurstPackets> frame_source_end_{};
    std::array<std::array<uint8_t, kMaxSegmentHeaderLen>, packet::kMaxBurstPackets> scratch_{};
};

}  // namespace vnet::gro
