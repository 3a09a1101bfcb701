#include "common/guest_fault.hpp"

#include <signal.h>

#include <mutex>

namespace vnet {
namespace guest_fault_detail {

thread_local RecoveryPoint* t_recovery = nullptr;

namespace {

void on_sigbus(int sig, siginfo_t* info, void*) {
    RecoveryPoint* point = t_recovery;
    if (point != nullptr) {
        point->fault_address = reinterpret_cast<uintptr_t>(info->si_addr);
        siglongjmp(point->env, 1);
    }
    // Not a guarded access: restore the default action; returning re-runs
    // the faulting access, which then ends the process as it would have.
    signal(sig, SIG_DFL);
}

}  // namespace

void install_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = on_sigbus;
        // SA_NODEFER: SIGBUS stays unblocked while the handler runs, so the
        // jump out of it (which does not restore the mask) leaves it usable.
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, nullptr);
    });
}

}  // namespace guest_fault_detail

void install_guest_fault_handler() {
    guest_fault_detail::install_handler();
}

}  // namespace vnet
