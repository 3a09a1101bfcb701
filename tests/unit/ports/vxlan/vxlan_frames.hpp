// Inner frames for the VXLAN datapath tests: a virtio-net header then an
// Ethernet frame whose every byte says which frame and which offset it is,
// so a test can check that a frame arrived whole, unmixed and in order.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "virtio/net_header.hpp"

namespace vnet::ports::test {

inline uint8_t frame_byte(uint32_t frame_id, uint32_t offset) {
    return static_cast<uint8_t>(frame_id * 31 + offset * 7 + 1);
}

// The inner frame `id` of `len` bytes (no virtio-net header).
inline std::vector<uint8_t> inner_frame(uint32_t id, uint32_t len) {
    std::vector<uint8_t> f(len);
    for (uint32_t i = 0; i < len; ++i) {
        f[i] = frame_byte(id, i);
    }
    return f;
}

// A virtio-net header of `header_size` bytes (flags, gso_type) then the
// inner frame `id` of `len` bytes.
inline std::vector<uint8_t> guest_frame(uint32_t id, uint32_t len, uint16_t header_size = 12,
                                        uint8_t flags = 0,
                                        uint8_t gso_type = virtio::NetHeader::kGsoNone) {
    std::vector<uint8_t> f(header_size, 0);
    f[virtio::kNetHeaderFlagsOffset] = flags;
    f[virtio::kNetHeaderGsoTypeOffset] = gso_type;
    const std::vector<uint8_t> inner = inner_frame(id, len);
    f.insert(f.end(), inner.begin(), inner.end());
    return f;
}

inline iovec whole(std::vector<uint8_t>& bytes) {
    return iovec{bytes.data(), bytes.size()};
}

// The bytes a message's iovecs hold, in order.
inline std::vector<uint8_t> gather(const iovec* iov, size_t count) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < count; ++i) {
        const auto* p = static_cast<const uint8_t*>(iov[i].iov_base);
        out.insert(out.end(), p, p + iov[i].iov_len);
    }
    return out;
}

inline sockaddr_storage ipv4_loopback(uint16_t port) {
    sockaddr_storage s{};
    auto& a = reinterpret_cast<sockaddr_in&>(s);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return s;
}

inline sockaddr_storage ipv6_loopback(uint16_t port) {
    sockaddr_storage s{};
    auto& a = reinterpret_cast<sockaddr_in6&>(s);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_loopback;
    return s;
}

}  // namespace vnet::ports::test
