// libFuzzer target: a hostile UDP message on a VXLAN socket, through what
// VxlanSocketPort does with it before the switch sees a frame. Must never
// crash; every frame must lie inside the message; the TCP checksum check
// must agree with an independent reference; frames handed on with the
// verdict's header must coalesce into frames the reference GSO segmenter
// splits back byte for byte (the coalesce checks of fuzz_gro); and every
// buffer must come back free once its frames are done.
//
// Input layout:
//   [0]    bit0 a UDP_GRO gso_size follows, bit1 MSG_TRUNC set
//   [1..2] gso_size, little-endian (with bit0)
//   then the message: VXLAN datagrams back to back (at most one buffer).
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "../unit/gro/coalesce_checks.hpp"
#include "../unit/gro/gso_segmenter.hpp"
#include "../unit/gro/segment_factory.hpp"
#include "fuzz_check.hpp"
#include "gro/burst_coalescer.hpp"
#include "packet/tcp_checksum_check.hpp"
#include "ports/vxlan/vxlan_receive_batch.hpp"
#include "virtio/net_header.hpp"

using namespace vnet;
using namespace vnet::gro::testing;

namespace {

constexpr uint32_t kVni = 100;

uint32_t be16(const uint8_t* p) {
    return uint32_t{p[0]} << 8 | p[1];
}

// The reference: the same rules as packet::tcp_checksum_verifies, written
// from RFC 791 / 8200 / 9293 over the test's own RFC 1071 sum.
bool reference_tcp_ok(const uint8_t* f, uint32_t len) {
    if (len < 14 + 20 + 20) {
        return false;
    }
    const uint8_t* ip = f + 14;
    const uint32_t room = len - 14;
    std::vector<uint8_t> pseudo;
    const uint8_t* l4 = nullptr;
    uint32_t l4_len = 0;
    if (be16(f + 12) == 0x0800) {
        const uint32_t total = be16(ip + 2);
        if (ip[0] != 0x45 || ip[9] != 6 || total > room || total < 40 ||
            (be16(ip + 6) & 0x3fff) != 0) {
            return false;
        }
        l4 = ip + 20;
        l4_len = total - 20;
        pseudo.assign(ip + 12, ip + 20);
        pseudo.insert(pseudo.end(),
                      {0, 6, static_cast<uint8_t>(l4_len >> 8), static_cast<uint8_t>(l4_len)});
    } else if (be16(f + 12) == 0x86dd) {
        if (room < 60 || (ip[0] >> 4) != 6 || ip[6] != 6) {
            return false;
        }
        l4_len = be16(ip + 4);
        if (l4_len < 20 || l4_len > room - 40) {
            return false;
        }
        l4 = ip + 40;
        pseudo.assign(ip + 8, ip + 40);
        pseudo.insert(pseudo.end(), {0, 0, static_cast<uint8_t>(l4_len >> 8),
                                     static_cast<uint8_t>(l4_len), 0, 0, 0, 6});
    } else {
        return false;
    }
    uint32_t sum = ref_checksum_add(0, pseudo.data(), pseudo.size());
    sum = ref_checksum_add(sum, l4, l4_len);
    return ref_checksum_fold(sum) == 0xffff;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) {
        return 0;
    }
    const uint8_t flags = data[0];
    size_t at = 1;
    std::optional<uint32_t> gso_size;
    if ((flags & 1) != 0) {
        if (size < 3) {
            return 0;
        }
        gso_size = uint32_t{data[1]} | uint32_t{data[2]} << 8;
        at = 3;
    }
    const size_t length = std::min<size_t>(size - at, ports::kVxlanReceiveBufferSize);

    ports::VxlanReceiveBatch batch(kVni, 1);
    uint8_t* buffer = batch.buffer_data(0);
    std::memcpy(buffer, data + at, length);
    const uint32_t ready = batch.accept_message(0, static_cast<uint32_t>(length),
                                                (flags & 2) != 0 ? MSG_TRUNC : 0, gso_size);
    FUZZ_CHECK(ready == batch.ready());

    // The frames as the port hands them on: its virtio-net header (all
    // zero, or DATA_VALID for a TCP segment whose checksum verified), then
    // the frame; at most a burst at a time, as the port gathers them.
    for (uint32_t first = 0; first < ready; first += packet::kMaxBurstPackets) {
        TestBurst in;
        const uint32_t n = std::min<uint32_t>(ready - first, packet::kMaxBurstPackets);
        for (uint32_t i = first; i < first + n; ++i) {
            const ports::VxlanReceivedFrame& frame = batch.ready_frame(i);
            FUZZ_CHECK(frame.buffer == 0);
            FUZZ_CHECK(frame.data >= buffer && frame.len >= 14 &&
                       frame.data + frame.len <= buffer + length);
            const bool verified = packet::tcp_checksum_verifies(frame.data, frame.len);
            FUZZ_CHECK(verified == reference_tcp_ok(frame.data, frame.len));
            Bytes packet(sizeof(virtio::NetHeader), 0);
            packet[virtio::kNetHeaderFlagsOffset] =
                verified ? virtio::NetHeader::kFlagDataValid : 0;
            packet.insert(packet.end(), frame.data, frame.data + frame.len);
            in.add(packet, {sizeof(virtio::NetHeader)});
        }
        gro::BurstCoalescer coalescer;
        packet::PacketBurst out;
        const gro::CoalesceOptions tcp_only{.tcp = true, .udp = false};
        const gro::CoalesceResult r =
            coalescer.coalesce(in.burst(), sizeof(virtio::NetHeader), tcp_only, out);
        FUZZ_CHECK(check_coalesced(in, sizeof(virtio::NetHeader), coalescer, r, out).empty());
    }
    batch.take(ready);
    batch.complete(ready);
    FUZZ_CHECK(batch.free_buffers() == 1);
    return 0;
}
