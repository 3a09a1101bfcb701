// PacketIdentity: which packet of a burst a sink stopped in the middle of,
// so that the same packet offered again resumes where it stopped and a new
// one the source put in the same buffer, under the same token and of the
// same length (the source dropped the first, e.g. a switch's hold that
// ended, and a pool gave the buffer out again at once), starts from its
// beginning. The first bytes hold the headers (addresses, IP ID, TCP
// sequence), which differ between two packets of one flow: two packets
// alike there, in the same pieces of memory, are the same frame again,
// and resuming one where the other stopped sends nothing the receiver did
// not already have. Taken only when a packet is cut off and when it is
// offered again, never per packet.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "packet/iovec.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::packet {

inline constexpr size_t kPacketFingerprintBytes = 128;

// A hash of the packet's first kPacketFingerprintBytes bytes (and of how
// many it has), eight at a time: a sink takes it for every packet it
// holds when its destination fills up, so it must cost little.
inline uint64_t packet_fingerprint(std::span<const iovec> packet) {
    uint8_t head[kPacketFingerprintBytes] = {};
    const size_t n = gather_prefix(packet, head, sizeof head);
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (size_t k = 0; k < sizeof head; k += sizeof(uint64_t)) {
        uint64_t word;
        std::memcpy(&word, head + k, sizeof word);
        h = (h ^ word) * 0x100000001b3ull;
        h ^= h >> 29;  // the multiply carries only upward: bring the top down
    }
    return h;
}

// FNV-1a of where the packet's pieces are: a sink that keeps its own
// iovecs of a packet (a send planned and not finished) may use them again
// only while the source's are the same.
inline uint64_t packet_layout(std::span<const iovec> packet) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const iovec& piece : packet) {
        h = (h ^ reinterpret_cast<uintptr_t>(piece.iov_base)) * 0x100000001b3ull;
        h = (h ^ piece.iov_len) * 0x100000001b3ull;
    }
    return h;
}

struct PacketIdentity {
    uint32_t len = 0;
    uint32_t token = 0;
    uint64_t layout = 0;
    uint64_t fingerprint = 0;

    static PacketIdentity of(const PacketBurst& burst, uint16_t i) {
        const std::span<const iovec> packet = burst.packet_iovecs(i);
        return {.len = burst.packets[i].len,
                .token = burst.packets[i].token,
                .layout = packet_layout(packet),
                .fingerprint = packet_fingerprint(packet)};
    }
    // Whether packet `i` of `burst` is this one: the cheap fields first.
    bool is(const PacketBurst& burst, uint16_t i) const {
        return in_its_place(burst, i) && packet_fingerprint(burst.packet_iovecs(i)) == fingerprint;
    }
    // Whether packet `i` of `burst` is of this one's length and token, in
    // the same pieces of memory: the same packet, or a new one the source
    // put there after dropping this one (its bytes tell, is()).
    bool in_its_place(const PacketBurst& burst, uint16_t i) const {
        return burst.packets[i].len == len && burst.packets[i].token == token &&
               packet_layout(burst.packet_iovecs(i)) == layout;
    }
};

}  // namespace vnet::packet
