// The old vnetd's side of an upgrade in place: starting the new binary as a
// child with our own command line plus --takeover-fd, and, when it gives up,
// collecting how it ended. (The daemon drives the exchange, daemon_upgrade.cpp.)
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "control/lifecycle/upgrade/handover_link.hpp"

namespace vnet::control::upgrade {

// The binary we run from as its path is on disk now: /proc/self/exe's
// target without the " (deleted)" the kernel adds once the file was
// replaced, so a new binary installed over the old one is what starts.
std::string current_binary();

// Our command line without argv[0] and without a --takeover-fd of our
// own (we may be a successor ourselves), from /proc/self/cmdline.
std::vector<std::string> own_arguments();

struct Successor {
    pid_t pid = -1;
    HandoverLink link;
};

// Fork and exec `binary` with `arguments` plus --takeover-fd N (the child's
// end of a new SOCK_SEQPACKET socketpair, the only fd it inherits), with
// the signal mask emptied and WATCHDOG_PID dropped from the environment
// (the watchdog is for whichever process is the unit's main one). Throws
// std::runtime_error naming the binary if it is not executable or fork fails.
Successor start_successor(const std::string& binary, const std::vector<std::string>& arguments);

// How a successor that gave up ended: "exited with status N", "killed by
// signal N", or, still running after `grace`, killed (SIGKILL) and reaped.
std::string reap_successor(pid_t pid, std::chrono::milliseconds grace);

}  // namespace vnet::control::upgrade
