// The RARP frame that announces a MAC at its new place after a live
// migration: what QEMU's announce_self sends for a guest without
// VIRTIO_NET_F_GUEST_ANNOUNCE, and what a vhost-user back end sends on
// SEND_RARP (vhost-user.rst; DPDK's broadcast_rarp). Broadcast, so every
// learning switch on the way (ours, the Linux bridge, the physical ones)
// moves the MAC to the port it came from.
#pragma once

#include <array>
#include <cstdint>

#include "packet/wire.hpp"

namespace vnet::packet {

// Ethernet + RARP (RFC 903: hardware 1 = Ethernet, protocol IPv4, opcode 3
// "request reverse", sender = target = `mac`, addresses 0), padded to the
// minimum frame.
std::array<uint8_t, kEthMinFrameLen> rarp_announcement(const MacAddress& mac);

}  // namespace vnet::packet
