// Descriptor-chain walker for split virtqueues (virtio 1.2 §2.7.5, §2.7.5.3).
// Turns one chain, starting at an avail-ring head, into host iovecs: the
// device-readable buffers first, then the device-writable ones.
//
// Every descriptor is read from guest memory exactly once into a local and
// checked there (the double-fetch class of DPDK bugs). Every rule broken
// has its own PopStatus so a log line can say exactly what the guest did
// (head_out_of_range: the head index is >= the queue size).
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <span>

#include "virtio/guest_memory.hpp"
#include "virtio/ring/pop_status.hpp"
#include "virtio/ring/shared_access.hpp"
#include "virtio/ring/split_layout.hpp"

namespace vnet::virtio {

// What a walk produced. iovecs [0, readable_segments) are device-readable;
// [readable_segments, readable_segments + writable_segments) are writable.
struct DescriptorChain {
    uint16_t head = 0;
    // 32-bit though a chain has at most 1024 segments: a caller copying the
    // two into 16-bit fields (PoppedChain) gets them merged by GCC into one
    // load across two 16-bit stores, a store-forwarding stall per packet.
    uint32_t readable_segments = 0;
    uint32_t writable_segments = 0;
    uint32_t readable_bytes = 0;
    uint32_t writable_bytes = 0;

    uint32_t segment_count() const { return uint32_t{readable_segments} + writable_segments; }
};

// What the walker needs to know about the ring and the negotiated features.
struct ChainWalkContext {
    const VirtqDesc* desc_table = nullptr;  // host pointer to the ring's descriptor table
    uint16_t queue_size = 0;
    bool indirect_allowed = false;  // VIRTIO_F_INDIRECT_DESC negotiated
    const GuestMemoryMap* memory = nullptr;
    size_t* region_hint = nullptr;  // per-queue last-hit cache for GuestMemoryMap
};

// Walks the chain starting at `head`. On ok, `out[0..chain.segment_count())`
// holds the buffers. Zero-length descriptors are skipped (they add no iovec).
PopStatus walk_descriptor_chain(const ChainWalkContext& ctx, uint16_t head, std::span<iovec> out,
                                DescriptorChain& chain);

// For a caller that decides the common chain itself (the split ring's burst
// pop): `first` is the descriptor at `head` (< queue size, checked by the
// caller) as that caller read it, once, with read_descriptor_once; the walk
// goes on from that copy, never re-reading it, with every rule and error of
// walk_descriptor_chain.
PopStatus walk_descriptor_chain_from(const ChainWalkContext& ctx, uint16_t head,
                                     const VirtqDesc& first, std::span<iovec> out,
                                     DescriptorChain& chain);

// Reads one descriptor from guest memory exactly once into a local (the
// double-fetch class of DPDK bugs): relaxed atomic loads of its two 64-bit
// halves, which the compiler may neither re-fetch nor tear. No ordering is
// needed: the acquire of avail->idx already ordered the driver's
// descriptor writes before this read. Indirect tables need not be 8-byte
// aligned (the spec does not say so), and an atomic load of a misaligned
// uint64_t is undefined: those are read byte-wise, out of line.
VirtqDesc read_misaligned_descriptor_once(const VirtqDesc* d);
// read_descriptor_once of a descriptor the caller knows is 8-byte aligned
// (one in a table it checked once).
inline VirtqDesc read_aligned_descriptor_once(const VirtqDesc* d) {
    const auto* words = static_cast<const uint64_t*>(static_cast<const void*>(d));
    const uint64_t addr = shared::load_relaxed(words[0]);
    const uint64_t rest = shared::load_relaxed(words[1]);  // len, flags, next (LE)
    // len, flags and next lie in VirtqDesc as in the ring (little-endian):
    // one 8-byte copy, which the compiler keeps as one register instead of
    // repacking three fields.
    VirtqDesc out;
    out.addr = addr;
    std::memcpy(&out.len, &rest, sizeof rest);
    return out;
}
inline VirtqDesc read_descriptor_once(const VirtqDesc* d) {
    if ((reinterpret_cast<uintptr_t>(d) & 7) != 0) [[unlikely]] {
        return read_misaligned_descriptor_once(d);
    }
    return read_aligned_descriptor_once(d);
}

}  // namespace vnet::virtio
