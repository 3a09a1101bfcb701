// SystemdNotify: vnetd's side of systemd's notify protocol (sd_notify(3),
// through libsystemd), for a unit of Type=notify with WatchdogSec
// (deploy/vnetd.service). READY=1 once every configured port is open (its
// socket listening or connecting, its tap open), STATUS= lines a person
// reads in `systemctl status`, STOPPING=1 when shutdown starts, WATCHDOG=1
// from the control loop. Without NOTIFY_SOCKET (not started by systemd)
// every call does nothing.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace vnet::control {

class SystemdNotify {
public:
    SystemdNotify();

    // `new_main_pid`: we replaced the unit's main process (upgrade in
    // place), so MAINPID= tells systemd to follow us (the unit needs
    // NotifyAccess=all for a message from a process it did not start).
    void ready(const std::string& status, bool new_main_pid = false) const;
    void status(const std::string& status) const;
    // Upgrade in place: the unit's main process is `pid` from now on, said
    // while we are still the main one (so NotifyAccess=main accepts it).
    void main_pid(int pid) const;
    void stopping(const std::string& status) const;
    void watchdog() const;

    // How often to send WATCHDOG=1: half of WATCHDOG_USEC, as
    // sd_watchdog_enabled(3) advises; none when the unit has no watchdog
    // (or it is meant for another process, WATCHDOG_PID).
    std::optional<std::chrono::milliseconds> watchdog_interval() const { return interval_; }

private:
    void send(const std::string& state) const;

    std::optional<std::chrono::milliseconds> interval_;
};

}  // namespace vnet::control
