// Who sent the request being handled: the control client's credentials,
// read with SO_PEERCRED when it connected. The control server sets them
// around each request line it hands to the method table (CallerScope), so
// that what a request changes can be logged with who asked for it, without
// every ControlApi call taking them. Control thread only.
#pragma once

#include <sys/types.h>

#include <optional>

namespace vnet::control::rpc {

struct Caller {
    uid_t uid;
    pid_t pid;
};

// The caller of the request being handled; none outside one (start-up,
// SIGHUP, a reload's own steps).
std::optional<Caller> current_caller();

class CallerScope {
public:
    explicit CallerScope(std::optional<Caller> caller);
    ~CallerScope();
    CallerScope(const CallerScope&) = delete;
    CallerScope& operator=(const CallerScope&) = delete;

private:
    std::optional<Caller> outer_;
};

}  // namespace vnet::control::rpc
