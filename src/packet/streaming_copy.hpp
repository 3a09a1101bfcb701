// A copy whose destination bypasses this CPU's cache: non-temporal stores.
//
// A 64 KB GSO frame switched VM -> VM is written once into the receiving
// guest's buffers and read next by that guest's vCPU, on another CPU. Plain
// stores first read each destination line into the worker's cache (a read
// for ownership, often from the receiver's cache, where its last frame in
// those buffers left them) only to overwrite it, and the frame then evicts
// the worker's own working set; streaming stores write whole lines to memory
// without either, which is where the VM -> VM GSO row's speed comes from
// (docs/BENCHMARKS.md, "GSO, whole frames"). Small frames keep plain stores:
// they are cheaper to hand over through the cache than through memory.
#pragma once

#include <cstddef>

namespace vnet::packet {

// Frames at least this long are copied with streaming stores: GSO frames,
// and single frames only where a port's MTU is above 16 KiB.
inline constexpr size_t kStreamingCopyMinFrame = 16 * 1024;

// Copies `n` bytes from `src` to `dst` (not overlapping). The stores are
// weakly ordered: call streaming_copy_fence() before publishing the bytes.
void streaming_copy(void* dst, const void* src, size_t n);

// Orders every streaming store before any later store (the used ring's
// index that hands the buffer to the guest).
void streaming_copy_fence();

}  // namespace vnet::packet
