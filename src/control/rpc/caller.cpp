#include "control/rpc/caller.hpp"

namespace vnet::control::rpc {
namespace {

std::optional<Caller> g_caller;  // the control thread's only

}  // namespace

std::optional<Caller> current_caller() {
    return g_caller;
}

CallerScope::CallerScope(std::optional<Caller> caller) : outer_(g_caller) {
    g_caller = caller;
}

CallerScope::~CallerScope() {
    g_caller = outer_;
}

}  // namespace vnet::control::rpc
