// libFuzzer target: BurstCoalescer over a hostile TX burst. Must never
// crash; every frame must check out against the unit tests' reference GSO
// segmenter (coverage in order, pass-through identity, byte-exact
// re-segmentation) and every out iovec must lie inside the input pieces or,
// for a merged frame's header, inside the coalescer's own scratch.
//
// Input layout:
//   [0]  bit0 12-byte virtio header (else 10), bit1 merge TCP, bit2 merge UDP
//   then up to 64 packets, each:
//   [0]  bit0 clone the previous packet's headers (next seq / IP ID),
//        bit1 fix lengths and checksums, bit2 lie in len (next byte: delta),
//        bit3-5 number of iovec cuts (each one byte: offset % (size + 1)),
//        bit6 set PSH (cloned TCP), bit7 NEEDS_CSUM with csum_start/offset
//   [1..2] byte count (little-endian, at most 9100): the packet, or with
//        bit0 the payload after the cloned headers
//   then the optional delta byte, the cut bytes, and the bytes themselves.
// Clone + fix lets the fuzzer reach real merges; everything else is raw.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../unit/gro/coalesce_checks.hpp"
#include "../unit/gro/segment_factory.hpp"
#include "fuzz_check.hpp"
#include "gro/burst_coalescer.hpp"
#include "packet/wire.hpp"

using namespace vnet;
using namespace vnet::gro::testing;

namespace {

class Input {
public:
    Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
    bool empty() const { return p_ == end_; }
    uint8_t byte() { return p_ == end_ ? 0 : *p_++; }
    Bytes bytes(size_t n) {
        n = std::min<size_t>(n, static_cast<size_t>(end_ - p_));
        Bytes b(p_, p_ + n);
        p_ += n;
        return b;
    }

private:
    const uint8_t* p_;
    const uint8_t* end_;
};

void put16(Bytes& b, size_t at, uint32_t v) {
    b[at] = static_cast<uint8_t>(v >> 8);
    b[at + 1] = static_cast<uint8_t>(v);
}
uint32_t get32(const Bytes& b, size_t at) {
    return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}

// A loose look at a packet's headers: where L3 and L4 start and end.
struct Layout {
    bool ok = false;
    bool v4 = false;
    uint8_t proto = 0;
    size_t l3 = 0, l4 = 0, header_len = 0;
};

Layout layout(const Bytes& b, size_t vnet) {
    Layout l;
    l.l3 = vnet + 14;
    if (b.size() < l.l3 + 40) {
        return l;
    }
    const uint16_t type = static_cast<uint16_t>(b[vnet + 12] << 8 | b[vnet + 13]);
    if (type == packet::kEtherTypeIpv4) {
        l.v4 = true;
        l.l4 = l.l3 + 20;
        l.proto = b[l.l3 + 9];
    } else if (type == packet::kEtherTypeIpv6) {
        l.l4 = l.l3 + 40;
        l.proto = b[l.l3 + 6];
    } else {
        return l;
    }
    if (l.proto == 6 && b.size() >= l.l4 + 20) {
        l.header_len = l.l4 + std::max<size_t>(20, size_t{b[l.l4 + 12]} >> 4 << 2);
    } else if (l.proto == 17) {
        l.header_len = l.l4 + 8;
    } else {
        return l;
    }
    l.ok = b.size() >= l.header_len;
    return l;
}

void fix_lengths_and_checksums(Bytes& b, size_t vnet, bool needs_csum) {
    const Layout l = layout(b, vnet);
    if (!l.ok) {
        return;
    }
    const size_t l4_len = b.size() - l.l4;
    if (l.v4) {
        put16(b, l.l3 + 2, static_cast<uint32_t>(b.size() - l.l3));
        put16(b, l.l3 + 10, 0);
        put16(b, l.l3 + 10,
              static_cast<uint16_t>(~ref_checksum_fold(ref_checksum_add(0, &b[l.l3], 20))));
    } else {
        put16(b, l.l3 + 4, static_cast<uint32_t>(l4_len));
    }
    const size_t check_at = l.l4 + (l.proto == 6 ? 16 : 6);
    if (l.proto == 17) {
        put16(b, l.l4 + 4, static_cast<uint32_t>(l4_len));
    }
    if (needs_csum) {
        b[0] = 1;
        b[1] = 0;
        b[6] = static_cast<uint8_t>(l.l4 - vnet);
        b[7] = 0;
        b[8] = static_cast<uint8_t>(check_at - l.l4);
        b[9] = 0;
        const uint32_t pseudo =
            (l.v4 ? ref_checksum_add(0, &b[l.l3 + 12], 8) : ref_checksum_add(0, &b[l.l3 + 8], 32)) +
            l.proto + static_cast<uint32_t>(l4_len);
        put16(b, check_at, ref_checksum_fold(pseudo));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Input in(data, size);
    const uint8_t mode = in.byte();
    const uint16_t vnet = (mode & 1) ? 12 : 10;
    const gro::CoalesceOptions options{.tcp = (mode & 2) != 0, .udp = (mode & 4) != 0};

    TestBurst burst;
    Bytes prev;
    while (!in.empty() && burst.burst().count < packet::kMaxBurstPackets) {
        const uint8_t control = in.byte();
        const size_t count = std::min<size_t>(in.byte() | in.byte() << 8, 9100);
        const int delta = (control & 4) ? static_cast<int8_t>(in.byte()) : 0;
        std::vector<uint8_t> cuts;
        for (int i = 0; i < ((control >> 3) & 7); ++i) {
            cuts.push_back(in.byte());
        }
        Bytes packet;
        const Layout pl = layout(prev, vnet);
        if ((control & 1) && pl.ok) {
            packet.assign(prev.begin(), prev.begin() + static_cast<ptrdiff_t>(pl.header_len));
            const Bytes payload = in.bytes(count);
            packet.insert(packet.end(), payload.begin(), payload.end());
            if (pl.v4) {
                put16(packet, pl.l3 + 4, (packet[pl.l3 + 4] << 8 | packet[pl.l3 + 5]) + 1u);
            }
            if (pl.proto == 6) {
                const uint32_t seq =
                    get32(prev, pl.l4 + 4) + static_cast<uint32_t>(prev.size() - pl.header_len);
                put16(packet, pl.l4 + 4, seq >> 16);
                put16(packet, pl.l4 + 6, seq & 0xffff);
                packet[pl.l4 + 13] = static_cast<uint8_t>((packet[pl.l4 + 13] & ~0x08) |
                                                          ((control & 0x40) ? 0x08 : 0));
            }
        } else {
            packet = in.bytes(count);
        }
        if (control & 2) {
            fix_lengths_and_checksums(packet, vnet, (control & 0x80) != 0);
        }
        std::vector<size_t> splits;
        for (uint8_t c : cuts) {
            splits.push_back(c % (packet.size() + 1));
        }
        const uint32_t len = static_cast<uint32_t>(static_cast<int64_t>(packet.size()) + delta);
        burst.add_with_len(packet, splits, burst.burst().count, len);
        prev = std::move(packet);
    }

    static packet::PacketBurst out;
    static gro::BurstCoalescer coalescer;
    const gro::CoalesceResult r = coalescer.coalesce(burst.burst(), vnet, options, out);
    const std::string err = check_coalesced(burst, vnet, coalescer, r, out);
    if (!err.empty()) {
        std::fprintf(stderr, "fuzz_gro: %s\n", err.c_str());
    }
    if (std::getenv("FUZZ_GRO_VERBOSE")) {  // to see what a corpus file exercises
        std::fprintf(stderr, "fuzz_gro: %u packets -> %u frames, %u merged of %u segments\n",
                     burst.burst().count, r.frames, r.merged_frames, r.merged_segments);
    }
    FUZZ_CHECK(err.empty());
    // ForwardPath skips coalesce() when may_merge() says no: it must never
    // say no to a burst coalesce() merges.
    FUZZ_CHECK(r.merged_frames == 0 ||
               gro::BurstCoalescer::may_merge(burst.burst(), vnet, options));
    // Merged headers live in the coalescer's scratch, nowhere else.
    const auto* lo = reinterpret_cast<const uint8_t*>(&coalescer);
    const auto* hi = lo + sizeof(coalescer);
    for (uint16_t f = 0; f < out.count; ++f) {
        const auto iovs = out.packet_iovecs(f);
        for (size_t k = 0; k < iovs.size(); ++k) {
            const auto* base = static_cast<const uint8_t*>(iovs[k].iov_base);
            const bool in_scratch = base >= lo && base + iovs[k].iov_len <= hi;
            FUZZ_CHECK(burst.owns(base, iovs[k].iov_len) || (k == 0 && in_scratch));
        }
    }
    return 0;
}
