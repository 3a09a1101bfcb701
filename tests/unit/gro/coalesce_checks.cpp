#include "coalesce_checks.hpp"

#include <sstream>

namespace vnet::gro::testing {
namespace {

Bytes without_hints(Bytes packet, size_t vnet_len, bool keep_num_buffers = true) {
    // hdr_len and gso_size mean nothing with GSO_NONE (the kernel ignores
    // them on a tap write), so a split need not restore them; likewise
    // csum_start and csum_offset without NEEDS_CSUM. num_buffers is ignored
    // on write too: a merged frame keeps its head's, so only the head's is
    // compared.
    const size_t end = !packet.empty() && packet[0] == 2 ? 10 : 6;
    for (size_t i = 2; i < end && i < packet.size(); ++i) {
        packet[i] = 0;
    }
    if (!keep_num_buffers && vnet_len == 12 && packet.size() >= 12) {
        packet[10] = packet[11] = 0;
    }
    return packet;
}

// True when a DATA_VALID packet's L4 checksum is right: the sum over the
// pseudo header and the L4 bytes (check included) folds to all ones.
bool l4_checksum_ok(const Bytes& p, size_t vnet_len, size_t l4) {
    const size_t l3 = vnet_len + 14;
    const bool v4 = p[vnet_len + 12] == 0x08;
    const size_t l4_len = p.size() - l4;
    uint32_t sum = v4 ? ref_checksum_add(0, &p[l3 + 12], 8) : ref_checksum_add(0, &p[l3 + 8], 32);
    sum += (v4 ? p[l3 + 9] : p[l3 + 6]) + static_cast<uint32_t>(l4_len);
    return ref_checksum_fold(ref_checksum_add(sum, &p[l4], l4_len)) == 0xffff;
}

// A DATA_VALID source is merged on the guest's word that its checksum is
// right (checking it would mean reading the whole payload). If the guest
// lied, the merged frame carries the right checksum instead: the only
// difference allowed, and only when the source's checksum really is wrong.
// `seg` is the split segment before its checksum was completed.
bool differs_only_in_a_wrong_data_valid_checksum(const Bytes& seg, const Bytes& completed,
                                                 const Bytes& original, size_t vnet_len) {
    if (original.size() != seg.size() || original[0] != 2) {
        return false;
    }
    const size_t l4 = vnet_len + static_cast<size_t>(seg[6] | seg[7] << 8);
    const size_t check_at = l4 + static_cast<size_t>(seg[8] | seg[9] << 8);
    Bytes a = without_hints(completed, vnet_len, false);
    Bytes b = without_hints(original, vnet_len, false);
    a[check_at] = a[check_at + 1] = b[check_at] = b[check_at + 1] = 0;
    return a == b && !l4_checksum_ok(original, vnet_len, l4);
}

}  // namespace

std::vector<uint16_t> frame_sizes(const BurstCoalescer& coalescer, const CoalesceResult& result) {
    std::vector<uint16_t> sizes;
    for (uint16_t f = 0; f < result.frames; ++f) {
        sizes.push_back(
            static_cast<uint16_t>(coalescer.source_packets(f + 1) - coalescer.source_packets(f)));
    }
    return sizes;
}

std::string check_coalesced(const TestBurst& in_burst, uint16_t vnet_len,
                            const BurstCoalescer& coalescer, const CoalesceResult& result,
                            const packet::PacketBurst& out) {
    const packet::PacketBurst& in = in_burst.burst();
    std::ostringstream err;
    if (result.frames != out.count) {
        return "result.frames != out.count";
    }
    if (coalescer.source_packets(result.frames) != in.count || coalescer.source_packets(0) != 0) {
        return "frames do not cover the input";
    }
    uint16_t merged = 0;
    uint32_t merged_segments = 0;
    for (uint16_t f = 0; f < out.count; ++f) {
        const uint16_t first = coalescer.source_packets(f);
        const uint16_t end = coalescer.source_packets(static_cast<uint16_t>(f + 1));
        if (end <= first) {
            err << "frame " << f << " covers no source";
            return err.str();
        }
        const packet::BurstPacket& frame = out.packets[f];
        const auto iovs = out.packet_iovecs(f);
        if (end - first == 1) {
            const auto src = in.packet_iovecs(first);
            bool same = frame.len == in.packets[first].len &&
                        frame.token == in.packets[first].token && iovs.size() == src.size();
            for (size_t k = 0; same && k < iovs.size(); ++k) {
                same = iovs[k].iov_base == src[k].iov_base && iovs[k].iov_len == src[k].iov_len;
            }
            if (!same) {
                err << "frame " << f << " is not source " << first << " unchanged";
                return err.str();
            }
            continue;
        }
        ++merged;
        merged_segments += end - first;
        if (frame.token != in.packets[first].token) {
            err << "merged frame " << f << " does not carry its head's token";
            return err.str();
        }
        if (iovs.empty() || in_burst.owns(iovs[0].iov_base, iovs[0].iov_len) ||
            iovs[0].iov_len > kMaxSegmentHeaderLen) {
            err << "merged frame " << f << " header iovec is not scratch";
            return err.str();
        }
        size_t total = 0;
        for (size_t k = 0; k < iovs.size(); ++k) {
            total += iovs[k].iov_len;
            if (k > 0 && !in_burst.owns(iovs[k].iov_base, iovs[k].iov_len)) {
                err << "merged frame " << f << " iovec " << k << " is outside the input";
                return err.str();
            }
        }
        const Bytes bytes = frame_bytes(out, f);
        if (total != frame.len) {
            err << "merged frame " << f << " len " << frame.len << " != iovec bytes " << total;
            return err.str();
        }
        if (bytes.size() - vnet_len - 14 > 65535) {
            err << "merged frame " << f << " exceeds 65535 IP bytes";
            return err.str();
        }
        const std::vector<Bytes> segs = gso_segment(bytes, vnet_len);
        if (segs.size() != size_t{end} - first) {
            err << "merged frame " << f << " splits into " << segs.size() << " segments, not "
                << end - first;
            return err.str();
        }
        for (uint16_t k = 0; k < segs.size(); ++k) {
            const Bytes original = frame_bytes(in, static_cast<uint16_t>(first + k));
            const Bytes seg = original[0] == 2 ? complete_checksum(segs[k], vnet_len) : segs[k];
            if (without_hints(seg, vnet_len, k == 0) != without_hints(original, vnet_len, k == 0) &&
                !differs_only_in_a_wrong_data_valid_checksum(segs[k], seg, original, vnet_len)) {
                err << "merged frame " << f << " segment " << k << " differs from source "
                    << first + k;
                for (size_t b = 0; b < std::min(seg.size(), original.size()); ++b) {
                    if (seg[b] != original[b]) {
                        err << " (first at byte " << b << ": " << int{seg[b]} << " vs "
                            << int{original[b]} << ")";
                        break;
                    }
                }
                if (seg.size() != original.size()) {
                    err << " (size " << seg.size() << " vs " << original.size() << ")";
                }
                return err.str();
            }
        }
    }
    if (merged != result.merged_frames || merged_segments != result.merged_segments) {
        return "merged counts disagree with the frames";
    }
    return "";
}

}  // namespace vnet::gro::testing
