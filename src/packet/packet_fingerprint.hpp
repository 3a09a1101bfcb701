// packet_fingerprint: a hash of a packet's first bytes, to tell a packet a
// sink stopped in the middle of from a new one the source put in the same
// buffer, under the same token and of the same length (the source dropped
// the first, e.g. a switch's hold that ended, and a pool gave the buffer
// out again at once). The first bytes hold the headers (addresses, IP ID,
// TCP sequence), which differ between two packets of one flow; two packets
// alike there are the same frame again, and resuming one where the other
// stopped sends nothing the receiver did not already have. Taken only when
// a packet is cut off and when it is resumed, never per packet.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "packet/iovec.hpp"

namespace vnet::packet {

inline constexpr size_t kPacketFingerprintBytes = 128;

inline uint64_t packet_fingerprint(std::span<const iovec> packet) {
    uint8_t head[kPacketFingerprintBytes];
    const size_t n = gather_prefix(packet, head, sizeof head);
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (size_t k = 0; k < n; ++k) {
        h = (h ^ head[k]) * 0x100000001b3ull;
    }
    return h;
}

}  // namespace vnet::packet
