// The guest memory the descriptor-chain tests share (the split walker's,
// its fast path's, the split burst pop's): where the ring, buffers and
// indirect tables lie, the flag shorthands, and a 4 GiB region for chains
// at the 2^32-byte limit.
//
//   [0x10000, 0x20000)  the ring (kRing), buffers (from kBuf) and indirect
//                       tables (from kTable)
//   [0x20000, 0x21000)  adjacent (kHigh): a buffer may span both regions
//   [0x40000, 0x41000)  apart (kFar), for the tests that map it
//   kUnmapped           nothing
#pragma once

#include <sys/mman.h>

#include <cstdint>

#include "virtio/guest_memory.hpp"
#include "virtio/ring/split_layout.hpp"

namespace vnet::virtio::test::chain_layout {

inline constexpr uint16_t N = VirtqDesc::kFlagNext;
inline constexpr uint16_t W = VirtqDesc::kFlagWrite;
inline constexpr uint16_t I = VirtqDesc::kFlagIndirect;

inline constexpr uint64_t kRing = 0x10000;
inline constexpr uint64_t kBuf = 0x14000;
inline constexpr uint64_t kTable = 0x18000;
inline constexpr uint64_t kLowEnd = 0x20000;
inline constexpr uint64_t kHigh = 0x20000;
inline constexpr uint64_t kFar = 0x40000;
inline constexpr uint64_t kUnmapped = 0x80000;

// Guest memory big enough for a 4 GiB buffer: a PROT_NONE reservation that
// the walkers only compute pointers into, never touch.
class HugeRegion {
public:
    static constexpr uint64_t kGpa = 0x1'0000'0000;
    static constexpr uint64_t kSize = 0x1'0000'0000;

    explicit HugeRegion(GuestMemoryMap& map) {
        void* p =
            ::mmap(nullptr, kSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            return;
        }
        base_ = p;
        ok_ = map.add(GuestRegion{kGpa, kSize, kGpa, static_cast<uint8_t*>(p), nullptr}) ==
              MemoryError::ok;
    }
    ~HugeRegion() {
        if (base_ != nullptr) {
            ::munmap(base_, kSize);
        }
    }
    HugeRegion(const HugeRegion&) = delete;
    HugeRegion& operator=(const HugeRegion&) = delete;
    bool ok() const { return ok_; }

private:
    void* base_ = nullptr;
    bool ok_ = false;
};

}  // namespace vnet::virtio::test::chain_layout
