// Test frames for the offload adaptation: a sender's virtio-net header and
// an Ethernet/IPv4-or-IPv6/TCP-or-UDP frame with a known payload, built
// field by field, plus a naive RFC 1071 checksum (16-bit words, one at a
// time) to check what the adaptation computed against something it does
// not share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vnet::virtio::test {

inline uint16_t be16_at(const std::vector<uint8_t>& b, size_t at) {
    return static_cast<uint16_t>((b[at] << 8) | b[at + 1]);
}
inline uint32_t be32_at(const std::vector<uint8_t>& b, size_t at) {
    return (uint32_t{be16_at(b, at)} << 16) | be16_at(b, at + 2);
}
inline uint16_t le16_at(const std::vector<uint8_t>& b, size_t at) {
    return static_cast<uint16_t>(b[at] | (b[at + 1] << 8));
}
inline void put_be16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
    b[at] = static_cast<uint8_t>(v >> 8);
    b[at + 1] = static_cast<uint8_t>(v);
}
inline void put_be32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
    put_be16(b, at, static_cast<uint16_t>(v >> 16));
    put_be16(b, at + 2, static_cast<uint16_t>(v));
}
inline void put_le16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
    b[at] = static_cast<uint8_t>(v);
    b[at + 1] = static_cast<uint8_t>(v >> 8);
}

// The one's-complement sum of bytes [from, from + len), 16 bits at a time.
inline uint32_t naive_sum(const std::vector<uint8_t>& b, size_t from, size_t len,
                          uint32_t sum = 0) {
    for (size_t i = 0; i < len; i += 2) {
        const uint32_t hi = b[from + i];
        const uint32_t lo = i + 1 < len ? b[from + i + 1] : 0;
        sum += (hi << 8) | lo;
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    return sum;
}

struct FrameSpec {
    bool ipv6 = false;
    bool udp = false;
    bool vlan = false;
    uint32_t payload = 3000;
    uint8_t tcp_flags = 0x18 | 0x01 | 0x80;  // PSH|ACK, FIN, CWR: every rule visible
    uint32_t seq = 0x10000000;
    uint16_t ip_id = 0x1234;
};

struct Frame {
    std::vector<uint8_t> bytes;  // the frame only, no virtio header
    size_t l3 = 14;
    size_t l4 = 0;
    size_t payload_at = 0;
    bool ipv6 = false;
    bool udp = false;
};

inline uint8_t payload_byte(size_t i) {
    return static_cast<uint8_t>(i * 13 + 7);
}

// A valid frame whose L4 checksum field holds the pseudo-header sum (a
// partial checksum, as a TSO sender hands it over).
inline Frame make_frame(const FrameSpec& s) {
    Frame f;
    f.ipv6 = s.ipv6;
    f.udp = s.udp;
    f.l3 = s.vlan ? 18 : 14;
    const size_t l3_len = s.ipv6 ? 40 : 20;
    f.l4 = f.l3 + l3_len;
    const size_t l4_header = s.udp ? 8 : 20;
    f.payload_at = f.l4 + l4_header;
    f.bytes.assign(f.payload_at + s.payload, 0);
    auto& b = f.bytes;
    for (size_t i = 0; i < 6; ++i) {
        b[i] = static_cast<uint8_t>(0x02 + i);
        b[6 + i] = static_cast<uint8_t>(0x12 + i);
    }
    if (s.vlan) {
        put_be16(b, 12, 0x8100);
        put_be16(b, 14, 42);
    }
    put_be16(b, f.l3 - 2, s.ipv6 ? 0x86dd : 0x0800);
    const uint8_t proto = s.udp ? 17 : 6;
    const uint32_t l4_len = static_cast<uint32_t>(l4_header + s.payload);
    if (s.ipv6) {
        b[f.l3] = 0x60;
        put_be16(b, f.l3 + 4, static_cast<uint16_t>(l4_len));
        b[f.l3 + 6] = proto;
        b[f.l3 + 7] = 64;
        for (size_t i = 0; i < 32; ++i) {
            b[f.l3 + 8 + i] = static_cast<uint8_t>(0xa0 + i);
        }
    } else {
        b[f.l3] = 0x45;
        put_be16(b, f.l3 + 2, static_cast<uint16_t>(20 + l4_len));
        put_be16(b, f.l3 + 4, s.ip_id);
        put_be16(b, f.l3 + 6, 0x4000);  // DF
        b[f.l3 + 8] = 64;
        b[f.l3 + 9] = proto;
        put_be32(b, f.l3 + 12, 0xc6120001);
        put_be32(b, f.l3 + 16, 0xc6120002);
        put_be16(b, f.l3 + 10, static_cast<uint16_t>(~naive_sum(b, f.l3, 20)));
    }
    if (s.udp) {
        put_be16(b, f.l4, 4000);
        put_be16(b, f.l4 + 2, 5000);
        put_be16(b, f.l4 + 4, static_cast<uint16_t>(l4_len));
    } else {
        put_be16(b, f.l4, 4000);
        put_be16(b, f.l4 + 2, 5000);
        put_be32(b, f.l4 + 4, s.seq);
        put_be32(b, f.l4 + 8, 0xabcdef01);
        b[f.l4 + 12] = 0x50;
        b[f.l4 + 13] = s.tcp_flags;
        put_be16(b, f.l4 + 14, 0xffff);
    }
    for (size_t i = 0; i < s.payload; ++i) {
        b[f.payload_at + i] = payload_byte(i);
    }
    return f;
}

// The pseudo-header sum of an L4 segment of `l4_len` bytes in frame `b`.
inline uint32_t naive_pseudo_sum(const std::vector<uint8_t>& b, size_t l3, bool ipv6, bool udp,
                                 uint32_t l4_len) {
    uint32_t sum = ipv6 ? naive_sum(b, l3 + 8, 32) : naive_sum(b, l3 + 12, 8);
    sum += (udp ? 17u : 6u) + (l4_len >> 16) + (l4_len & 0xffff);
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum;
}

// Whether the L4 checksum of the segment at [l4, end of b) is right.
inline bool l4_checksum_valid(const std::vector<uint8_t>& b, size_t l3, size_t l4, bool ipv6,
                              bool udp) {
    const auto l4_len = static_cast<uint32_t>(b.size() - l4);
    return naive_sum(b, l4, l4_len, naive_pseudo_sum(b, l3, ipv6, udp, l4_len)) == 0xffff;
}

// Puts the partial checksum (the pseudo-header sum) in the L4 check field.
inline void make_partial(Frame& f) {
    const size_t check = f.l4 + (f.udp ? 6 : 16);
    put_be16(f.bytes, check, 0);
    put_be16(f.bytes, check,
             static_cast<uint16_t>(naive_pseudo_sum(f.bytes, f.l3, f.ipv6, f.udp,
                                                    static_cast<uint32_t>(f.bytes.size() - f.l4))));
}

struct SenderHeader {
    uint8_t flags = 0;
    uint8_t gso_type = 0;
    uint16_t hdr_len = 0;
    uint16_t gso_size = 0;
    uint16_t csum_start = 0;
    uint16_t csum_offset = 0;
};

// The sender's packet: its header (10 or 12 bytes) and the frame.
inline std::vector<uint8_t> sender_packet(const SenderHeader& h, const Frame& f,
                                          size_t header_size = 12) {
    std::vector<uint8_t> p(header_size, 0);
    p[0] = h.flags;
    p[1] = h.gso_type;
    put_le16(p, 2, h.hdr_len);
    put_le16(p, 4, h.gso_size);
    put_le16(p, 6, h.csum_start);
    put_le16(p, 8, h.csum_offset);
    if (header_size >= 12) {
        put_le16(p, 10, 0x7777);  // num_buffers from a TX header: must not leak through
    }
    p.insert(p.end(), f.bytes.begin(), f.bytes.end());
    return p;
}

}  // namespace vnet::virtio::test
