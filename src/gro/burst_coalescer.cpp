#include "gro/burst_coalescer.hpp"

#include <algorithm>

#include "gro/merged_header.hpp"
#include "packet/iovec.hpp"

namespace vnet::gro {
namespace {

// The most IP bytes (header included) in a merged frame, for IPv6 too:
// kernel GRO stops there (gro_max_size 65536 counts from the network
// header), and so does a guest's own TSO, so no device behind the tap sees
// a bigger GSO skb than it would without us. IPv4's tot_len allows no more.
constexpr uint32_t kMaxMergedIpLength = packet::kMaxIpPacketLen;

// UDP_MAX_SEGMENTS (include/linux/udp.h): the kernel rejects USO frames of
// more segments; a burst cannot reach it.
static_assert(packet::kMaxBurstPackets <= 128);

bool kind_enabled(SegmentKind kind, const CoalesceOptions& options) {
    return is_tcp(kind) ? options.tcp : options.udp;
}

bool merging_possible(const packet::PacketBurst& in, uint16_t vnet_header_size,
                      const CoalesceOptions& options) {
    return (options.tcp || options.udp) && (vnet_header_size == 10 || vnet_header_size == 12) &&
           in.iovecs_used + in.count / 2 <= packet::kMaxBurstIovecs;
}

}  // namespace

bool BurstCoalescer::may_merge(const packet::PacketBurst& in, uint16_t vnet_header_size,
                               const CoalesceOptions& options) {
    if (in.count < 2 || !merging_possible(in, vnet_header_size, options)) {
        return false;
    }
    const auto vnet_len = static_cast<uint8_t>(vnet_header_size);
    auto candidate = [&](uint16_t i) {
        return may_be_segment(in.packet_iovecs(i), in.packets[i].len, vnet_len, options.tcp,
                              options.udp);
    };
    // A merged frame needs two consecutive candidates, and every pair of
    // consecutive packets has one at an odd index: only odd packets need a
    // first look (half the peeks for a burst with nothing to merge), and
    // only an odd candidate's neighbours a second.
    for (uint16_t i = 1; i < in.count; i += 2) {
        if (candidate(i) && (candidate(static_cast<uint16_t>(i - 1)) ||
                             (i + 1 < in.count && candidate(static_cast<uint16_t>(i + 1))))) {
            return true;
        }
    }
    return false;
}

CoalesceResult BurstCoalescer::coalesce(const packet::PacketBurst& in, uint16_t vnet_header_size,
                                        const CoalesceOptions& options, packet::PacketBurst& out) {
    out.clear();
    result_ = {};
    sources_done_ = 0;
    run_ = {};
    const bool merging = merging_possible(in, vnet_header_size, options);
    const auto vnet_len = static_cast<uint8_t>(vnet_header_size);
    for (uint16_t i = 0; i < in.count; ++i) {
        SegmentHeader& seg = headers_[head_ ^ 1];
        // The peek first: it refuses most packets that are not segments
        // without the copy parse_segment takes.
        const bool candidate =
            merging &&
            may_be_segment(in.packet_iovecs(i), in.packets[i].len, vnet_len, options.tcp,
                           options.udp) &&
            parse_segment(in.packet_iovecs(i), in.packets[i].len, vnet_len, seg) &&
            kind_enabled(seg.kind, options);
        if (candidate && run_.count > 0 && extends_run(seg)) {
            add_to_run(seg);
        } else {
            flush_run(in, out);
            if (candidate) {
                head_ ^= 1;
                start_run(i);
            } else {
                pass_through(in, i, out);
            }
        }
        // A segment shorter than gso_size or carrying PSH must be a frame's
        // last: a GSO split puts the remainder and PSH on the last segment.
        const SegmentHeader& head = headers_[head_];
        if (run_.count > 0 &&
            (run_.last_push || run_.payload_bytes != uint32_t{run_.count} * head.payload_len)) {
            flush_run(in, out);
        }
    }
    flush_run(in, out);
    return result_;
}

uint16_t BurstCoalescer::source_packets(uint16_t frames) const {
    frames = std::min(frames, result_.frames);
    return frames == 0 ? 0 : frame_source_end_[frames - 1];
}

bool BurstCoalescer::extends_run(const SegmentHeader& seg) const {
    const SegmentHeader& head = headers_[head_];
    const uint32_t ip_length = static_cast<uint32_t>(head.l4_offset - head.l3_offset) +
                               head.l4_header_len() + run_.payload_bytes + seg.payload_len;
    return seg.payload_len <= head.payload_len && ip_length <= kMaxMergedIpLength &&
           (!is_ipv4(head.kind) || seg.ip_id == run_.next_ip_id) &&
           (!is_tcp(head.kind) || seg.tcp_seq == run_.next_seq) && same_flow_and_shape(head, seg);
}

void BurstCoalescer::start_run(uint16_t index) {
    const SegmentHeader& head = headers_[head_];
    run_ = Run{index,
               1,
               head.payload_len,
               head.tcp_seq + head.payload_len,
               static_cast<uint16_t>(head.ip_id + 1),
               head.push};
}

void BurstCoalescer::add_to_run(const SegmentHeader& seg) {
    ++run_.count;
    run_.payload_bytes += seg.payload_len;
    run_.next_seq = seg.tcp_seq + seg.payload_len;
    run_.next_ip_id = static_cast<uint16_t>(seg.ip_id + 1);
    run_.last_push = seg.push;
}

void BurstCoalescer::flush_run(const packet::PacketBurst& in, packet::PacketBurst& out) {
    if (run_.count == 1) {
        pass_through(in, run_.first, out);
    } else if (run_.count > 1) {
        emit_merged(in, out);
    }
    run_.count = 0;
}

void BurstCoalescer::emit_merged(const packet::PacketBurst& in, packet::PacketBurst& out) {
    const SegmentHeader& head = headers_[head_];
    uint8_t* header = scratch_[result_.merged_frames].data();
    std::span<iovec> free = out.free_iovecs();
    // The budget rule in the header guarantees the room; if it ever did
    // not hold, the run still goes out, unmerged.
    size_t used = 1;
    for (uint16_t i = run_.first; i < run_.first + run_.count; ++i) {
        const int n =
            free.size() > used
                ? packet::slice_iovecs(in.packet_iovecs(i), head.header_len,
                                       in.packets[i].len - head.header_len, free.subspan(used))
                : -1;
        if (n < 0) {
            for (uint16_t j = run_.first; j < run_.first + run_.count; ++j) {
                pass_through(in, j, out);
            }
            return;
        }
        used += static_cast<size_t>(n);
    }
    write_merged_header(head, run_.payload_bytes, run_.last_push, header);
    free[0] = iovec{header, head.header_len};
    out.push(static_cast<uint16_t>(used), head.header_len + run_.payload_bytes,
             in.packets[run_.first].token);
    ++result_.merged_frames;
    result_.merged_segments += run_.count;
    end_frame(run_.count);
}

void BurstCoalescer::pass_through(const packet::PacketBurst& in, uint16_t index,
                                  packet::PacketBurst& out) {
    const std::span<const iovec> iovs = in.packet_iovecs(index);
    std::copy(iovs.begin(), iovs.end(), out.free_iovecs().begin());
    out.push(static_cast<uint16_t>(iovs.size()), in.packets[index].len, in.packets[index].token);
    end_frame(1);
}

void BurstCoalescer::end_frame(uint16_t sources) {
    sources_done_ = static_cast<uint16_t>(sources_done_ + sources);
    frame_source_end_[result_.frames++] = sources_done_;
}

}  // namespace vnet::gro
