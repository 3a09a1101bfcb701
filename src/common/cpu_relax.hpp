// A spin-wait hint (x86 PAUSE, Arm YIELD): a polling loop that finds
// nothing tells the core so, which lets an SMT sibling run and keeps the
// loop from reading the lines other cores write (guests' ring indexes) back
// to back. What DPDK's rte_pause() is for in its poll loops.
#pragma once

#include <atomic>

namespace vnet {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#else
    std::atomic_signal_fence(std::memory_order_seq_cst);  // at least not folded away
#endif
}

}  // namespace vnet
