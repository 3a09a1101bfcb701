// PacketVerifier: recognises vnet-pktgen frames on receive and checks them
// end to end: headers consistent with the received length, IPv4 header
// checksum, and every payload byte against the pattern. A frame may arrive
// in several pieces (mergeable RX buffers); pieces hold frame bytes only,
// the virtio_net_hdr already stripped.
//
// Frames without our stamp (testpmd txonly, ARP from a tap, ...) are
// "foreign": counted, never called corrupt.
//
// A TCP frame the back end cut into segments (a GSO frame for a receiver
// without TSO) arrives as its first segment, stamped, then segments without
// a stamp: those are recognised by their TCP sequence number, which follows
// the stamped one's, and their payload checked against the pattern at that
// offset. TCP checksums are checked too: in full, or as the partial
// (pseudo-header) sum when the frame came with NEEDS_CSUM.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vnet::frontend {

enum class FrameVerdict : uint8_t {
    ok,
    foreign,          // not one of ours: no stamp where ours carry it
    bad_length,       // IPv4/UDP lengths disagree with the bytes received
    bad_ip_checksum,  // IPv4 header checksum wrong
    bad_payload,      // a payload byte differs from the pattern
    bad_l4_checksum,  // TCP checksum (or its partial pseudo-header sum) wrong
};
const char* to_string(FrameVerdict v);

struct FrameCheck {
    FrameVerdict verdict = FrameVerdict::foreign;
    uint64_t seq = 0;           // valid unless foreign or a continuation
    bool continuation = false;  // a later segment of a frame the back end cut
};

// One piece of a received frame, as every buffer list in the tree is.
using FramePiece = iovec;

class PacketVerifier {
public:
    PacketVerifier();

    // `partial_checksum`: the frame's virtio header had NEEDS_CSUM.
    FrameCheck check(std::span<const FramePiece> pieces, bool partial_checksum = false);
    FrameCheck check(std::span<const std::byte> frame, bool partial_checksum = false) {
        const iovec piece{const_cast<std::byte*>(frame.data()), frame.size()};
        return check(std::span<const FramePiece>(&piece, 1), partial_checksum);
    }

private:
    // Compares the frame from `payload_offset + skip` on with the pattern
    // from payload offset `pattern_offset + skip` on.
    bool payload_matches(std::span<const FramePiece> pieces, size_t payload_offset,
                         size_t pattern_offset, size_t skip) const;
    bool tcp_checksum_ok(std::span<const FramePiece> pieces, const std::byte* ip, size_t frame_len,
                         bool partial) const;

    // The TCP sequence number of the last stamped frame: where the payload
    // of its unstamped segments is counted from.
    bool tcp_frame_seen_ = false;
    uint32_t tcp_frame_seq_ = 0;

    // The expected payload bytes, computed once: comparing with memcmp
    // against it is far cheaper than computing the pattern per byte.
    std::vector<std::byte> reference_payload_;
};

// Loss and reordering from sequence numbers, the way pktgen-style tools
// count them: a jump forward is a gap (lost until proven otherwise), a
// number below the next expected one is a late arrival (reordered) and
// fills one gap. Sequences start at 0.
class SequenceTracker {
public:
    void record(uint64_t seq) {
        if (seq == next_expected_) {
            ++next_expected_;
        } else if (seq > next_expected_) {
            missing_ += seq - next_expected_;
            next_expected_ = seq + 1;
        } else {
            ++reordered_;
            if (missing_ > 0) {
                --missing_;
            }
        }
    }
    uint64_t missing() const { return missing_; }
    uint64_t reordered() const { return reordered_; }
    uint64_t next_expected() const { return next_expected_; }

private:
    uint64_t next_expected_ = 0;
    uint64_t missing_ = 0;
    uint64_t reordered_ = 0;
};

}  // namespace vnet::frontend
