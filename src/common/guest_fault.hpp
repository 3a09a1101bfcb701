// Surviving a guest that shrinks its memory under us (hostile-input rule 4).
//
// Guest memory is a mapping of a file the front end owns (memfd, hugetlbfs).
// If it truncates that file, our next access to the lost pages raises
// SIGBUS. A thread that may touch guest memory runs that code inside
// run_guarded(): the process-wide SIGBUS handler jumps back to the innermost
// recovery point of the faulting thread, run_guarded() returns false with
// the faulting address, and the caller breaks the device that owns it. A
// SIGBUS outside any recovery point keeps its default action.
//
// Cost on the datapath: one sigsetjmp without saving the signal mask (no
// syscall; the handler runs with SA_NODEFER, so SIGBUS is never left
// blocked). The guarded code must not own resources whose destructors the
// jump would skip: the datapath holds only spans and indices there.
#pragma once

#include <setjmp.h>

#include <cstdint>

namespace vnet {

namespace guest_fault_detail {
struct RecoveryPoint {
    sigjmp_buf env;
    uintptr_t fault_address;
};
extern thread_local RecoveryPoint* t_recovery;
void install_handler();
}  // namespace guest_fault_detail

// Installs the SIGBUS handler; idempotent, call once at start-up (run_guarded
// does not, to keep a check off the datapath).
void install_guest_fault_handler();

// Runs f(). Returns true if it completed; false if it touched lost guest
// memory, then *fault_address is where.
template <class F>
bool run_guarded(F&& f, uintptr_t* fault_address) {
    using guest_fault_detail::RecoveryPoint;
    RecoveryPoint point;
    RecoveryPoint* outer = guest_fault_detail::t_recovery;
    if (sigsetjmp(point.env, 0) != 0) {
        guest_fault_detail::t_recovery = outer;
        *fault_address = point.fault_address;
        return false;
    }
    guest_fault_detail::t_recovery = &point;
    f();
    guest_fault_detail::t_recovery = outer;
    return true;
}

}  // namespace vnet
