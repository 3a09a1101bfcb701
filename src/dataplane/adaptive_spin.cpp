#include "dataplane/adaptive_spin.hpp"

#include <algorithm>

namespace vnet::dataplane {

void AdaptiveSpin::set_ceiling_ns(uint64_t ceiling_ns) {
    ceiling_ns_ = ceiling_ns;
    gap_ewma_ns_ = ceiling_ns / kSpinMultiple;
}

uint64_t AdaptiveSpin::spin_budget_ns() const {
    return std::min(ceiling_ns_, gap_ewma_ns_ * kSpinMultiple);
}

void AdaptiveSpin::on_work(uint64_t now_ns) {
    if (idle_since_ns_ == 0) {
        return;  // back-to-back work: no gap
    }
    const uint64_t gap = now_ns > idle_since_ns_ ? now_ns - idle_since_ns_ : 0;
    idle_since_ns_ = 0;
    if (gap > ceiling_ns_) {
        gap_ewma_ns_ >>= 1;  // no spin could have caught it
        return;
    }
    // ewma += (gap - ewma) / 8, in unsigned arithmetic.
    if (gap >= gap_ewma_ns_) {
        gap_ewma_ns_ += (gap - gap_ewma_ns_) >> kEwmaShift;
    } else {
        gap_ewma_ns_ -= (gap_ewma_ns_ - gap) >> kEwmaShift;
    }
}

bool AdaptiveSpin::keep_spinning(uint64_t now_ns) {
    if (idle_since_ns_ == 0) {
        // 0 is the "working" mark; a clock at 0 counts as 1 ns.
        idle_since_ns_ = std::max<uint64_t>(now_ns, 1);
    }
    const uint64_t idle_for = now_ns > idle_since_ns_ ? now_ns - idle_since_ns_ : 0;
    return idle_for < spin_budget_ns();
}

}  // namespace vnet::dataplane
