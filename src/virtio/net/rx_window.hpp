// The RX window: chains popped from the guest's RX ring ahead of the
// packets that fill them, in ring order, with their device-writable
// iovecs. The per-packet calls (lend a buffer, commit what was written)
// touch only the window, never the ring; the ring is visited once per
// refill (add) and once per flush (stage_used, give_back).
//
// The chains not yet filled stay in the window from one burst to the next
// (keep_unlent): a reader that finds nothing to read pops and gives back
// nothing, so a spinning worker, or one that drains a tap a few frames per
// turn, does not walk the same 32 chains again every turn. Each head
// remembers the ring position before its pop: the unused ones are given
// back (rewind) when the ring stops (give_back), which is why they must be
// the last ones popped. A filled head's used entry is staged at flush, not
// per packet.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "packet/packet_burst.hpp"
#include "virtio/log/queue_log.hpp"
#include "virtio/net_header.hpp"
#include "virtio/ring/device_ring.hpp"

namespace vnet::virtio {

class RxWindow {
public:
    // Heads per burst; a burst that needs more flushes and starts a new one.
    static constexpr uint16_t kHeads = 256;

    struct Head {
        uint16_t id;
        uint16_t slots;
        RingPosition before;  // position() before this chain's pop
        uint16_t first_iov;
        uint16_t iov_count;
        uint32_t bytes;
        uint32_t filled;  // set by commit: the used length
    };

    // No room for another head or iovec: the burst must flush first.
    bool full() const { return count_ == kHeads || iovecs_used_ == packet::kMaxBurstIovecs; }
    uint16_t free_heads() const { return static_cast<uint16_t>(kHeads - count_); }
    bool holds_iovecs() const { return iovecs_used_ != 0; }
    uint16_t size() const { return count_; }
    // Where the next chain's writable iovecs go.
    std::span<iovec> free_iovecs() {
        return {iovecs_.data() + iovecs_used_, size_t{packet::kMaxBurstIovecs} - iovecs_used_};
    }
    // A chain just popped into free_iovecs() (all of it device-writable).
    void add(const PoppedChain& chain, RingPosition before) {
        heads_[count_++] = Head{chain.id,
                                chain.slots,
                                before,
                                iovecs_used_,
                                chain.writable_segments,
                                chain.writable_bytes,
                                0};
        iovecs_used_ = static_cast<uint16_t>(iovecs_used_ + chain.writable_segments);
    }

    // Bytes of the heads from `first` on, not yet holding a packet, counted
    // only until they reach `enough`: a packet looks at the one or two
    // heads it needs, not at every head of a 256-chain window.
    uint64_t unlent_bytes(uint16_t first, uint64_t enough) const {
        uint64_t have = 0;
        for (uint16_t i = first; i < count_ && have < enough; ++i) {
            have += heads_[i].bytes;
        }
        return have;
    }
    uint16_t first_unlent() const { return pos_; }
    const Head& head(uint16_t i) const { return heads_[i]; }
    std::span<const iovec> head_iovecs(uint16_t i) const {
        return {iovecs_.data() + heads_[i].first_iov, heads_[i].iov_count};
    }
    bool has_unlent() const { return count_ > pos_; }
    // Heads popped from the ring and not yet filled: still the guest's
    // posted buffers, as far as "how many are left" goes.
    uint16_t unlent_heads() const { return static_cast<uint16_t>(count_ - pos_); }

    // Lends the next head (or, mergeable, as many as hold `max_packet`
    // bytes; the caller made sure the window covers it).
    std::span<const iovec> lend(uint32_t max_packet, bool mergeable) {
        uint16_t k = 1;
        if (mergeable) {
            uint64_t bytes = heads_[pos_].bytes;
            while (bytes < max_packet) {
                bytes += heads_[pos_ + k].bytes;
                ++k;
            }
        }
        const Head& first = heads_[pos_];
        const Head& last = heads_[pos_ + k - 1];
        taken_ = k;
        requested_max_ = max_packet;
        return {iovecs_.data() + first.first_iov,
                static_cast<size_t>(last.first_iov + last.iov_count - first.first_iov)};
    }
    // lend() when the next head holds `max_packet` bytes on its own.
    std::span<const iovec> lend_one(uint32_t max_packet) {
        const Head& h = heads_[pos_];
        taken_ = 1;
        requested_max_ = max_packet;
        return {iovecs_.data() + h.first_iov, h.iov_count};
    }
    bool lent() const { return taken_ != 0; }
    const Head& first_lent() const { return heads_[pos_]; }
    uint32_t requested_max() const { return requested_max_; }
    // The lent buffer stays unfilled (it is lent again for the next packet).
    void cancel() { taken_ = 0; }
    // The packet written into the lent buffer is `len` bytes (never more
    // than was lent): marks the heads it filled and returns how many. With
    // `write_num_buffers` that count goes into the header's num_buffers,
    // unless it is 1 and `header_says_one` (the writer's header already
    // holds num_buffers = 1, as OffloadAdaptation's always do).
    uint16_t commit(uint32_t len, bool mergeable, bool write_num_buffers,
                    bool header_says_one = false) {
        // A buffer of one head (every packet without MRG_RXBUF, and every
        // small one with it) is filled by the packet alone: decided inline,
        // as it is once per packet on the VM -> VM path.
        if (taken_ == 1) [[likely]] {
            Head& h = heads_[pos_];
            if (write_num_buffers && !header_says_one) {
                write_num_buffers_of(h, 1);
            }
            h.filled = std::min(len, h.bytes);  // staged at flush (stage_used)
            ++pos_;
            taken_ = 0;
            return 1;
        }
        return commit_heads(len, mergeable, write_num_buffers);
    }

    // Stages the used entries of heads filled since the last call, first
    // marking what was written into them while the front end logs.
    template <DeviceRing R>
    void stage_used(R& ring, QueueLog& log) {
        const uint16_t from = staged_;
        if (log.active()) [[unlikely]] {
            for (uint16_t i = from; i < pos_; ++i) {
                const Head& h = heads_[i];
                log.mark_buffer({iovecs_.data() + h.first_iov, h.iov_count}, h.filled);
            }
        }
        ring.add_used_n(static_cast<uint16_t>(pos_ - from), [&](uint16_t i) {
            const Head& h = heads_[from + i];
            return UsedEntry{h.id, h.slots, h.filled};
        });
        staged_ = pos_;
    }
    // End of a burst: stages what was filled and keeps the unlent heads,
    // moved to the front, for the next burst (no ring access for them).
    template <DeviceRing R>
    void keep_unlent(R& ring, QueueLog& log) {
        stage_used(ring, log);
        drop_filled();
    }
    // The ring stops: stages what was filled, gives the rest back to the
    // ring and empties the window.
    template <DeviceRing R>
    void give_back(R& ring, QueueLog& log) {
        stage_used(ring, log);
        if (pos_ != count_) {
            // Everything from the first unused chain on goes back, as seen.
            ring.rewind(heads_[pos_].before);
        }
        count_ = 0;
        pos_ = 0;
        staged_ = 0;
        taken_ = 0;
        iovecs_used_ = 0;
    }

private:
    // commit() of a buffer lent as more than one head (mergeable).
    uint16_t commit_heads(uint32_t len, bool mergeable, bool write_num_buffers);
    // virtio 1.2 §5.1.6.4: num_buffers is the number of buffers the packet
    // spans; written into the header at the start of `first`'s iovecs.
    void write_num_buffers_of(const Head& first, uint16_t count) {
        // The header may be split over tiny buffers by a guest: the span
        // runs to the end of the window, scatter_at walks it if it must.
        const std::span<const iovec> header(iovecs_.data() + first.first_iov,
                                            size_t{iovecs_used_} - first.first_iov);
        uint8_t num_buffers[2];
        packet::store_le16(num_buffers, count);
        packet::scatter_at(header, kNetHeaderNumBuffersOffset, num_buffers, sizeof num_buffers);
    }

    // Forgets the filled heads (staged already): the unlent ones and their
    // iovecs move to the front (what the last refill popped ahead of need:
    // a few dozen heads at most).
    void drop_filled();

    std::array<Head, kHeads> heads_{};
    uint16_t count_ = 0;          // heads in the window
    uint16_t pos_ = 0;            // first head not yet holding a packet
    uint16_t taken_ = 0;          // heads the current packet's buffer spans
    uint16_t staged_ = 0;         // filled heads whose used entry is staged
    uint32_t requested_max_ = 0;  // max_packet of the current lend
    std::array<iovec, packet::kMaxBurstIovecs> iovecs_{};
    uint16_t iovecs_used_ = 0;
};

}  // namespace vnet::virtio
