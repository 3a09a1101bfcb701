// libFuzzer target: OffloadAdaptation over a hostile sender's packet, into
// a receiver with fuzzed offloads and RX buffers. Must never crash or touch
// memory outside the packet and the buffers (ASan), and what the receiver
// gets must be what its features allow:
//   * no NEEDS_CSUM, DATA_VALID or GSO type for a receiver without GUEST_CSUM
//     (virtio 1.2 §5.1.6.4.1), no GSO type it did not negotiate;
//   * every committed length within the lent buffer;
//   * segments: each at most one gso_size of payload, and together exactly
//     the frame's payload; a TCP/UDP segment with a full checksum sums right.
//
// Input layout:
//   [0] receiver: bit0 GUEST_CSUM, bit1 TSO4, bit2 TSO6, bit3 ECN, bit4 UFO,
//       bit5 USO4, bit6 USO6, bit7 MRG_RXBUF
//   [1] bit0 a 10-byte sender header (else 12), bit1 a legacy receiver
//       (10-byte header, no MRG_RXBUF), bit2 build a valid frame from
//       [2..5] first (else the frame is raw), bits 3-7 piece size - 1 of
//       the sender's iovecs and the receiver's buffers
//   [2] bit0 IPv6, bit1 UDP, bit2 VLAN; [3..4] payload length; [5] RX
//       buffer size class
//   [6..15] the sender's virtio-net header (raw), then the raw frame bytes
//       (or, with bit2 of [1], bytes xored onto the built frame).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../unit/virtio/net/offload_frames.hpp"
#include "fuzz_check.hpp"
#include "virtio/net/offload_adaptation.hpp"

using namespace vnet;
using namespace vnet::virtio;
using namespace vnet::virtio::test;

namespace {

struct Rx {
    size_t buffer_bytes = 0;
    size_t piece = 1;
    size_t budget = 4096;
    std::vector<std::vector<uint8_t>> packets;
    std::vector<uint8_t> current;
    std::vector<iovec> iovs;
    uint32_t lent = 0;
    uint32_t requested = 0;
    size_t truncated = 0;  // NetRxQueue drops these (rx_buffer_too_small)

    bool next_buffer(uint32_t max_packet, std::span<const iovec>* out) {
        if (packets.size() >= budget) {
            return false;
        }
        // Mergeable-like when buffer_bytes is 0: exactly what was asked for.
        const size_t size = buffer_bytes != 0 ? buffer_bytes : max_packet;
        current.assign(size, 0xee);
        iovs.clear();
        // As an RX window holds them: at most kMaxBurstIovecs pieces.
        const size_t step =
            std::max(piece, (size + packet::kMaxBurstIovecs - 1) / packet::kMaxBurstIovecs);
        for (size_t at = 0; at < size; at += step) {
            iovs.push_back({current.data() + at, std::min(step, size - at)});
        }
        lent = static_cast<uint32_t>(size);
        requested = max_packet;
        *out = iovs;
        return true;
    }
    void commit_buffer(uint32_t len) {
        FUZZ_CHECK(len <= lent);
        if (len >= lent && lent < requested) {
            ++truncated;
            return;
        }
        FUZZ_CHECK(len == requested);
        packets.emplace_back(current.begin(), current.begin() + len);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 16) {
        return 0;
    }
    const uint8_t rf = data[0];
    const uint8_t mode = data[1];
    FeatureSet features{};
    const bool legacy = (mode & 2) != 0;
    if (!legacy) {
        features = features.with(Feature::version_1);
    }
    if ((rf & 0x80) && !legacy) {
        features = features.with(Feature::net_mrg_rxbuf);
    }
    const Feature bits[] = {Feature::net_guest_csum, Feature::net_guest_tso4,
                            Feature::net_guest_tso6, Feature::net_guest_ecn,
                            Feature::net_guest_ufo,  Feature::net_guest_uso4,
                            Feature::net_guest_uso6};
    for (int i = 0; i < 7; ++i) {
        if (rf & (1u << i)) {
            features = features.with(bits[i]);
        }
    }
    const ReceiverOffloads receiver = receiver_offloads(features);
    const size_t sender_header = (mode & 1) ? 10 : 12;
    const size_t piece = ((mode >> 3) & 0x1f) + 1;

    std::vector<uint8_t> frame;
    const uint8_t* raw = data + 16;
    const size_t raw_len = size - 16;
    if (mode & 4) {
        FrameSpec spec;
        spec.ipv6 = data[2] & 1;
        spec.udp = data[2] & 2;
        spec.vlan = data[2] & 4;
        spec.payload = (data[3] | (data[4] << 8)) % 9000;
        Frame f = make_frame(spec);
        make_partial(f);
        frame = f.bytes;
        for (size_t i = 0; i < raw_len && i < frame.size(); ++i) {
            frame[i] ^= raw[i];
        }
    } else {
        frame.assign(raw, raw + raw_len);
    }
    std::vector<uint8_t> packet(sender_header, 0);
    std::memcpy(packet.data(), data + 6, std::min<size_t>(sender_header, 10));
    packet.insert(packet.end(), frame.begin(), frame.end());
    std::vector<iovec> iovs;
    // As a burst holds a packet: at most kMaxBurstIovecs pieces.
    const size_t step =
        std::max(piece, (packet.size() + packet::kMaxBurstIovecs - 1) / packet::kMaxBurstIovecs);
    for (size_t at = 0; at < packet.size(); at += step) {
        iovs.push_back({packet.data() + at, std::min(step, packet.size() - at)});
    }

    Rx rx;
    rx.piece = piece;
    static constexpr size_t kBufferSizes[] = {0, 0, 64, 1526, 4096, 65562};
    rx.buffer_bytes = receiver.mergeable ? 0 : kBufferSizes[data[5] % 6];
    if (rx.buffer_bytes == 0 && !receiver.mergeable) {
        rx.buffer_bytes = 65562;
    }

    OffloadAdaptation adaptation;
    adaptation.set_receiver(receiver);
    adaptation.plan(iovs, static_cast<uint32_t>(packet.size()),
                    static_cast<uint32_t>(sender_header));
    const AdaptedDelivery d = deliver_adapted(adaptation, rx, iovs, 0);
    FUZZ_CHECK(d.finished);  // the budget is never reached by one frame
    if (d.dropped) {
        FUZZ_CHECK(rx.packets.empty());
        return 0;
    }
    const DeliveryPlan& final_plan = adaptation.current();
    const size_t rh = receiver.header_size;
    uint64_t payload = 0;
    for (const auto& p : rx.packets) {
        FUZZ_CHECK(p.size() >= rh);
        const uint8_t flags = p[0];
        const uint8_t gso = p[1] & 0x7f;
        if (!receiver.csum) {
            FUZZ_CHECK(flags == 0 && p[1] == 0);
        }
        FUZZ_CHECK((flags & NetHeader::kFlagNeedsCsum) == 0 || receiver.csum);
        FUZZ_CHECK(gso == NetHeader::kGsoNone || (gso == NetHeader::kGsoTcpV4 && receiver.tso4) ||
                   (gso == NetHeader::kGsoTcpV6 && receiver.tso6) ||
                   (gso == NetHeader::kGsoUdp && receiver.ufo) ||
                   (gso == NetHeader::kGsoUdpL4 && (receiver.uso4 || receiver.uso6)));
        FUZZ_CHECK((p[1] & NetHeader::kGsoEcn) == 0 || receiver.tso_ecn);
        if (final_plan.how == Delivery::segments) {
            FUZZ_CHECK(p.size() >= rh + final_plan.headers_len);
            const size_t n = p.size() - rh - final_plan.headers_len;
            FUZZ_CHECK(n <= final_plan.gso_size);
            payload += n;
            const bool udp_l4 = final_plan.gso_type == NetHeader::kGsoUdpL4;
            const bool tcp = final_plan.gso_type == NetHeader::kGsoTcpV4 ||
                             final_plan.gso_type == NetHeader::kGsoTcpV6;
            if ((tcp || udp_l4) && !final_plan.partial_segments) {
                const std::vector<uint8_t> seg(p.begin() + static_cast<std::ptrdiff_t>(rh),
                                               p.end());
                FUZZ_CHECK(l4_checksum_valid(seg, final_plan.l3_offset, final_plan.l4_offset,
                                             !final_plan.ipv4, udp_l4));
            }
        }
    }
    if (final_plan.how == Delivery::segments && rx.truncated == 0) {
        FUZZ_CHECK(rx.packets.size() == final_plan.segment_count);
        FUZZ_CHECK(payload == final_plan.payload_len);
    }
    return 0;
}
