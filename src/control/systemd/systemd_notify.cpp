#include "control/systemd/systemd_notify.hpp"

#include <systemd/sd-daemon.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace vnet::control {

SystemdNotify::SystemdNotify() {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        // At least 1 ms: a timer of 0 would spin the control loop.
        interval_ = std::max(std::chrono::milliseconds(1),
                             std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::microseconds(usec / 2)));
    }
}

// sd_notify is a no-op returning 0 without NOTIFY_SOCKET; a failure to
// reach systemd is not the datapath's problem, so it is not an error here
// either (systemd notices the missing READY=1 or WATCHDOG=1 on its own).
void SystemdNotify::send(const std::string& state) const {
    sd_notify(0, state.c_str());
}

void SystemdNotify::ready(const std::string& status, bool new_main_pid) const {
    send((new_main_pid ? "MAINPID=" + std::to_string(::getpid()) + "\n" : std::string()) +
         "READY=1\nSTATUS=" + status);
}

void SystemdNotify::status(const std::string& status) const {
    send("STATUS=" + status);
}

void SystemdNotify::main_pid(int pid) const {
    send("MAINPID=" + std::to_string(pid) + "\nSTATUS=handed over to pid " + std::to_string(pid));
}

void SystemdNotify::stopping(const std::string& status) const {
    send("STOPPING=1\nSTATUS=" + status);
}

void SystemdNotify::watchdog() const {
    send("WATCHDOG=1");
}

}  // namespace vnet::control
