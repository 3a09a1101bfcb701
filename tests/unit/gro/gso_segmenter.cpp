#include "gso_segmenter.hpp"

#include <algorithm>

namespace vnet::gro::testing {
namespace {

uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t be32(const uint8_t* p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
void put_be16(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
void put_be32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
    }
}
uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}
void put_le16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}

constexpr uint8_t kNeedsCsum = 1;
constexpr uint8_t kDataValid = 2;
constexpr uint8_t kGsoTcpV4 = 1, kGsoTcpV6 = 4, kGsoUdpL4 = 5;

uint32_t pseudo_sum(const uint8_t* l3, bool v4, uint8_t proto, uint32_t l4_len) {
    uint32_t s = v4 ? ref_checksum_add(0, l3 + 12, 8) : ref_checksum_add(0, l3 + 8, 32);
    return s + proto + (l4_len >> 16) + (l4_len & 0xffff);
}

}  // namespace

uint32_t ref_checksum_add(uint32_t sum, const uint8_t* p, size_t len) {
    uint64_t acc = sum;
    for (size_t i = 0; i < len; ++i) {
        acc += (i % 2 == 0) ? uint32_t{p[i]} << 8 : p[i];
    }
    while (acc >> 32) {
        acc = (acc & 0xffffffff) + (acc >> 32);
    }
    return static_cast<uint32_t>(acc);
}

uint16_t ref_checksum_fold(uint32_t sum) {
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(sum);
}

std::vector<Bytes> gso_segment(std::span<const uint8_t> frame, size_t vnet_len) {
    if (frame.size() < vnet_len + 14) {
        return {};
    }
    const uint8_t gso_type = frame[1];
    if (gso_type == 0) {
        return {Bytes(frame.begin(), frame.end())};
    }
    const size_t gso_size = le16(frame.data() + 4);
    const size_t l3 = vnet_len + 14;
    const size_t l4 = vnet_len + le16(frame.data() + 6);  // transport header = csum_start
    const bool v4 =
        be16(frame.data() + vnet_len + packet::kEthTypeOffset) == packet::kEtherTypeIpv4;
    const bool tcp = gso_type == kGsoTcpV4 || gso_type == kGsoTcpV6;
    if (gso_size == 0 || frame.size() < l4 + (tcp ? 20 : 8) ||
        (gso_type != kGsoTcpV4 && gso_type != kGsoTcpV6 && gso_type != kGsoUdpL4)) {
        return {};
    }
    const size_t hlen = tcp ? l4 + static_cast<size_t>(frame[l4 + 12] >> 4) * 4 : l4 + 8;
    if (frame.size() <= hlen) {
        return {};
    }
    const size_t payload = frame.size() - hlen;
    const size_t count = (payload + gso_size - 1) / gso_size;
    const uint8_t orig_flags = tcp ? frame[l4 + 13] : 0;
    std::vector<Bytes> out;
    for (size_t i = 0; i < count; ++i) {
        const size_t off = i * gso_size;
        const size_t len = std::min(gso_size, payload - off);
        Bytes seg(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(hlen));
        seg.insert(seg.end(), frame.begin() + static_cast<ptrdiff_t>(hlen + off),
                   frame.begin() + static_cast<ptrdiff_t>(hlen + off + len));
        uint8_t* s = seg.data();
        const uint32_t l4_len = static_cast<uint32_t>(hlen - l4 + len);
        // virtio header of a plain CHECKSUM_PARTIAL packet.
        s[0] = kNeedsCsum;
        s[1] = 0;
        put_le16(s + 2, 0);
        put_le16(s + 4, 0);
        uint8_t* ip = s + l3;
        if (v4) {
            put_be16(ip + 2, static_cast<uint32_t>(l4 - l3) + l4_len);
            put_be16(ip + 4, be16(frame.data() + l3 + 4) + i);
            put_be16(ip + 10, 0);
            put_be16(ip + 10,
                     static_cast<uint16_t>(~ref_checksum_fold(ref_checksum_add(0, ip, 20))));
        } else {
            put_be16(ip + 4, l4_len);
        }
        uint8_t* th = s + l4;
        if (tcp) {
            put_be32(th + 4, be32(frame.data() + l4 + 4) + static_cast<uint32_t>(off));
            uint8_t flags = orig_flags;
            if (i + 1 != count) {
                flags &= static_cast<uint8_t>(~0x09);  // PSH, FIN: last segment only
            }
            if (i != 0) {
                flags &= static_cast<uint8_t>(~0x80);  // CWR: first segment only
            }
            th[13] = flags;
            put_be16(th + 16, ref_checksum_fold(pseudo_sum(ip, v4, 6, l4_len)));
        } else {
            put_be16(th + 4, l4_len);
            put_be16(th + 6, ref_checksum_fold(pseudo_sum(ip, v4, 17, l4_len)));
        }
        out.push_back(std::move(seg));
    }
    return out;
}

Bytes complete_checksum(Bytes packet, size_t vnet_len) {
    if (packet.size() < vnet_len || packet[0] != kNeedsCsum) {
        return packet;
    }
    const size_t start = vnet_len + le16(packet.data() + 6);
    const size_t at = start + le16(packet.data() + 8);
    if (at + 2 > packet.size()) {
        return packet;
    }
    uint16_t sum = static_cast<uint16_t>(
        ~ref_checksum_fold(ref_checksum_add(0, packet.data() + start, packet.size() - start)));
    const bool udp = le16(packet.data() + 8) == 6;
    if (udp && sum == 0) {
        sum = 0xffff;  // RFC 768: a computed zero is sent as all ones
    }
    put_be16(packet.data() + at, sum);
    packet[0] = kDataValid;
    put_le16(packet.data() + 6, 0);
    put_le16(packet.data() + 8, 0);
    return packet;
}

}  // namespace vnet::gro::testing
