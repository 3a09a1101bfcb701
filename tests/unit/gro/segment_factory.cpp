#include "segment_factory.hpp"

#include <algorithm>
#include <cstring>

namespace vnet::gro::testing {
namespace {

void put16(Bytes& b, size_t at, uint32_t v) {
    b[at] = static_cast<uint8_t>(v >> 8);
    b[at + 1] = static_cast<uint8_t>(v);
}
void put32(Bytes& b, size_t at, uint32_t v) {
    put16(b, at, v >> 16);
    put16(b, at + 2, v & 0xffff);
}
void put_le16(Bytes& b, size_t at, uint16_t v) {
    b[at] = static_cast<uint8_t>(v);
    b[at + 1] = static_cast<uint8_t>(v >> 8);
}

uint8_t payload_byte(uint32_t seed, size_t i) {
    uint32_t x = seed * 2654435761u + static_cast<uint32_t>(i) * 40503u;
    x ^= x >> 13;
    return static_cast<uint8_t>(x * 0x5bd1e995u >> 24);
}

}  // namespace

std::vector<uint8_t> timestamp_options(uint32_t tsval, uint32_t tsecr) {
    Bytes o{1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0};
    put32(o, 4, tsval);
    put32(o, 8, tsecr);
    return o;
}

Bytes build_segment(const SegmentSpec& s) {
    const size_t l3 = l3_offset(s);
    const size_t l4 = l4_offset(s);
    const size_t l4_header = s.udp ? 8 : 20 + s.tcp_options.size();
    const size_t l4_len = l4_header + s.payload_len;
    Bytes b(l4 + l4_len, 0);

    // virtio-net header.
    b[0] = s.data_valid ? 2 : 1;
    put_le16(b, 2, s.hdr_len_hint);
    put_le16(b, 4, s.gso_size_hint);
    if (!s.data_valid) {
        put_le16(b, 6, static_cast<uint16_t>(l4 - s.vnet_len));
        put_le16(b, 8, s.udp ? 6 : 16);
    }
    if (s.vnet_len == 12) {
        put_le16(b, 10, s.num_buffers);
    }
    // Ethernet.
    std::copy(s.dst_mac.begin(), s.dst_mac.end(), b.begin() + s.vnet_len);
    std::copy(s.src_mac.begin(), s.src_mac.end(), b.begin() + s.vnet_len + 6);
    put16(b, s.vnet_len + 12, s.ipv6 ? packet::kEtherTypeIpv6 : packet::kEtherTypeIpv4);
    // IP.
    const uint8_t proto = s.udp ? 17 : 6;
    if (s.ipv6) {
        put32(b, l3, 6u << 28 | uint32_t{s.tos} << 20 | (s.flow_label & 0xfffff));
        put16(b, l3 + 4, static_cast<uint32_t>(l4_len));
        b[l3 + 6] = proto;
        b[l3 + 7] = s.ttl;
        const uint8_t src[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, s.addr_tag};
        const uint8_t dst[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x99};
        std::memcpy(&b[l3 + 8], src, 16);
        std::memcpy(&b[l3 + 24], dst, 16);
    } else {
        b[l3] = 0x45;
        b[l3 + 1] = s.tos;
        put16(b, l3 + 2, static_cast<uint32_t>(20 + l4_len));
        put16(b, l3 + 4, s.ip_id);
        put16(b, l3 + 6, s.dont_fragment ? 0x4000 : 0);
        b[l3 + 8] = s.ttl;
        b[l3 + 9] = proto;
        put32(b, l3 + 12, 0x0a000000u | s.addr_tag);
        put32(b, l3 + 16, 0x0a000199u);
        put16(b, l3 + 10,
              static_cast<uint16_t>(~ref_checksum_fold(ref_checksum_add(0, &b[l3], 20))));
    }
    // L4.
    put16(b, l4, s.src_port);
    put16(b, l4 + 2, s.dst_port);
    size_t check_at = 0;
    if (s.udp) {
        put16(b, l4 + 4, static_cast<uint32_t>(l4_len));
        check_at = l4 + 6;
    } else {
        put32(b, l4 + 4, s.seq);
        put32(b, l4 + 8, s.ack);
        b[l4 + 12] = static_cast<uint8_t>((l4_header / 4) << 4);
        b[l4 + 13] = s.tcp_flags;
        put16(b, l4 + 14, s.window);
        std::copy(s.tcp_options.begin(), s.tcp_options.end(), b.begin() + l4 + 20);
        check_at = l4 + 16;
    }
    for (size_t i = 0; i < s.payload_len; ++i) {
        b[l4 + l4_header + i] = payload_byte(s.payload_seed, i);
    }
    const uint32_t pseudo =
        (s.ipv6 ? ref_checksum_add(0, &b[l3 + 8], 32) : ref_checksum_add(0, &b[l3 + 12], 8)) +
        proto + static_cast<uint32_t>(l4_len);
    put16(b, check_at, ref_checksum_fold(pseudo));
    if (s.data_valid) {
        put16(b, check_at, 0);
        uint16_t full =
            static_cast<uint16_t>(~ref_checksum_fold(ref_checksum_add(pseudo, &b[l4], l4_len)));
        put16(b, check_at, s.udp && full == 0 ? 0xffff : full);
    }
    return b;
}

void TestBurst::add(const Bytes& bytes, std::vector<size_t> splits, uint32_t token) {
    add_with_len(bytes, std::move(splits), token, static_cast<uint32_t>(bytes.size()));
}

void TestBurst::add_with_len(const Bytes& bytes, std::vector<size_t> splits, uint32_t token,
                             uint32_t len) {
    std::sort(splits.begin(), splits.end());
    splits.push_back(bytes.size());
    auto free = burst_->free_iovecs();
    size_t at = 0;
    uint16_t n = 0;
    for (size_t end : splits) {
        end = std::min(end, bytes.size());
        const size_t size = end - at;
        // Each piece its own exact-size block; an empty piece gets a 1-byte
        // block so its base is a real pointer nobody may read.
        pieces_.push_back(std::make_unique<uint8_t[]>(std::max<size_t>(size, 1)));
        if (size != 0) {
            std::memcpy(pieces_.back().get(), bytes.data() + at, size);
        }
        ranges_.emplace_back(pieces_.back().get(), size);
        free[n++] = iovec{pieces_.back().get(), size};
        at = end;
    }
    burst_->push(n, len, token);
}

bool TestBurst::owns(const void* p, size_t n) const {
    const auto* b = static_cast<const uint8_t*>(p);
    return std::any_of(ranges_.begin(), ranges_.end(),
                       [&](const auto& r) { return b >= r.first && b + n <= r.first + r.second; });
}

Bytes frame_bytes(const packet::PacketBurst& burst, uint16_t i) {
    Bytes out;
    for (const iovec& v : burst.packet_iovecs(i)) {
        const auto* p = static_cast<const uint8_t*>(v.iov_base);
        out.insert(out.end(), p, p + v.iov_len);
    }
    return out;
}

}  // namespace vnet::gro::testing
