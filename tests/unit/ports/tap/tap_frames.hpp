// Frames for the tap -> guest tests: built here, sent into a real tap from
// the host side (an AF_PACKET socket bound to it, so tun queues them for its
// reader exactly as it queues what the stack sends), and checked byte for
// byte where they land.
//
// Every frame names its flow and its sequence number within the flow, and
// the rest of it follows from those two, so a receiver can check each frame
// alone and the order per flow. Frames the kernel sends on its own (IPv6
// neighbour discovery on a fresh link) are not ours: is_ours() tells them
// apart.
#pragma once

#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "virtio/net_header.hpp"

namespace vnet::ports::testing {

// Whether this process can make taps (root, /dev/net/tun): the tests that
// need one skip with a reason otherwise.
inline bool can_make_taps() {
    const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    ::close(fd);
    return ::geteuid() == 0;
}

// A tap name no other test of this run (or of a run beside it) uses:
// `prefix`, the pid and a counter.
inline std::string fresh_tap_name(const char* prefix) {
    static int n = 0;
    return prefix + std::to_string(::getpid() % 100000) + "_" + std::to_string(n++);
}

enum class TapFrameKind : uint8_t {
    udp,      // a plain UDP/IPv4 frame of the given length
    tcp_gso,  // a TCP/IPv4 super-frame with a GSO TCPV4 header (MSS 1448)
};

struct TapFrame {
    std::vector<uint8_t> bytes;  // the Ethernet frame
    virtio::NetHeader header{};  // what goes with it (all zero for a plain frame)
};

constexpr uint16_t kTapFrameMss = 1448;
constexpr size_t kEthIpLen = 14 + 20;
// Flow and sequence number sit right after the L4 header.
constexpr size_t kUdpPayload = kEthIpLen + 8;
constexpr size_t kTcpPayload = kEthIpLen + 20;

inline uint8_t tap_frame_byte(uint16_t flow, uint32_t seq, size_t i) {
    return static_cast<uint8_t>(seq * 31 + flow * 7 + i);
}

// `len`: the whole Ethernet frame (>= 64 for udp; a GSO frame up to 65535 +
// 14). The flow picks the source address and port, so tun's flow hash
// spreads flows over a multiqueue tap's queues.
inline TapFrame make_tap_frame(TapFrameKind kind, uint16_t flow, uint32_t seq, size_t len) {
    TapFrame f;
    f.bytes.assign(len, 0);
    uint8_t* p = f.bytes.data();
    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x01};
    const uint8_t src[6] = {0x02, 0, 0, 0, 0, 0x02};
    std::memcpy(p, dst, 6);
    std::memcpy(p + 6, src, 6);
    p[12] = 0x08;  // IPv4
    uint8_t* ip = p + 14;
    const size_t ip_len = len - 14;
    ip[0] = 0x45;
    ip[2] = static_cast<uint8_t>(ip_len >> 8);
    ip[3] = static_cast<uint8_t>(ip_len);
    ip[8] = 64;
    ip[9] = kind == TapFrameKind::udp ? 17 : 6;
    const uint8_t saddr[4] = {10, 9, static_cast<uint8_t>(flow >> 8), static_cast<uint8_t>(flow)};
    const uint8_t daddr[4] = {10, 8, 0, 1};
    std::memcpy(ip + 12, saddr, 4);
    std::memcpy(ip + 16, daddr, 4);
    uint8_t* l4 = ip + 20;
    const auto sport = static_cast<uint16_t>(20000 + flow);
    l4[0] = static_cast<uint8_t>(sport >> 8);
    l4[1] = static_cast<uint8_t>(sport);
    l4[2] = 0x23;  // port 9000
    l4[3] = 0x28;
    size_t payload = kUdpPayload;
    if (kind == TapFrameKind::udp) {
        const size_t udp_len = ip_len - 20;
        l4[4] = static_cast<uint8_t>(udp_len >> 8);
        l4[5] = static_cast<uint8_t>(udp_len);
    } else {
        payload = kTcpPayload;
        l4[12] = 5 << 4;  // data offset: 20 bytes
        l4[13] = 0x18;    // PSH ACK
        f.header.flags = virtio::NetHeader::kFlagNeedsCsum;
        f.header.gso_type = virtio::NetHeader::kGsoTcpV4;
        f.header.hdr_len = static_cast<uint16_t>(kTcpPayload);
        f.header.gso_size = kTapFrameMss;
        f.header.csum_start = static_cast<uint16_t>(kEthIpLen);
        f.header.csum_offset = 16;
    }
    std::memcpy(p + payload, "VRX1", 4);
    std::memcpy(p + payload + 4, &flow, 2);
    std::memcpy(p + payload + 6, &seq, 4);
    for (size_t i = payload + 10; i < len; ++i) {
        p[i] = tap_frame_byte(flow, seq, i);
    }
    return f;
}

struct FrameId {
    uint16_t flow;
    uint32_t seq;
};

// The flow and sequence number of one of our frames; nullopt for another.
inline std::optional<FrameId> tap_frame_id(const uint8_t* frame, size_t len) {
    if (len < kTcpPayload + 10 || frame[12] != 0x08 || frame[13] != 0 || frame[14 + 16] != 10 ||
        frame[14 + 17] != 8) {
        return std::nullopt;
    }
    const size_t payload = frame[14 + 9] == 17 ? kUdpPayload : kTcpPayload;
    if (std::memcmp(frame + payload, "VRX1", 4) != 0) {
        return std::nullopt;
    }
    FrameId id{};
    std::memcpy(&id.flow, frame + payload + 4, 2);
    std::memcpy(&id.seq, frame + payload + 6, 4);
    return id;
}

// Sends frames into tap `ifname` from the host side: tun queues each one
// for the tap's reader. Straight to the device (PACKET_QDISC_BYPASS), with
// a virtio-net header in front of every frame (PACKET_VNET_HDR) so GSO
// frames go whole to a tap whose offloads take them.
class TapInjector {
public:
    explicit TapInjector(const std::string& ifname) {
        fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
        if (fd_ < 0) {
            return;
        }
        const int one = 1;
        const int sndbuf = 64 << 20;
        ::setsockopt(fd_, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
        ::setsockopt(fd_, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one);
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
        sockaddr_ll addr{};
        addr.sll_family = AF_PACKET;
        addr.sll_ifindex = static_cast<int>(::if_nametoindex(ifname.c_str()));
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~TapInjector() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    TapInjector(const TapInjector&) = delete;
    TapInjector& operator=(const TapInjector&) = delete;

    bool ok() const { return fd_ >= 0; }
    // The legacy 10-byte virtio_net_hdr (what PACKET_VNET_HDR takes), then the frame.
    bool send(const TapFrame& f) {
        std::vector<uint8_t> out(10 + f.bytes.size());
        std::memcpy(out.data(), &f.header, 10);
        std::memcpy(out.data() + 10, f.bytes.data(), f.bytes.size());
        return ::send(fd_, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size());
    }

private:
    int fd_ = -1;
};

}  // namespace vnet::ports::testing
