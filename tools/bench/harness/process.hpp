// Child processes of a benchmark run: fork/exec with CPU pinning, an
// optional network namespace (through `ip netns exec`), output to a log
// file, and stop by PID only (SIGTERM/SIGINT, then SIGKILL after a timeout).
// Every child gets its own process group, so a Ctrl-C at the terminal
// reaches vnet-bench alone, which then stops its children in order; and
// PR_SET_PDEATHSIG, so none outlives a vnet-bench that was SIGKILLed.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vnet::bench {

struct ProcessSpec {
    std::string name;               // for logs: "vnetd", "testpmd (peer)"
    std::vector<std::string> argv;  // argv[0] is looked up in PATH
    std::optional<int> cpu;         // sched_setaffinity before exec
    bool idle_priority = false;     // SCHED_IDLE before exec (`chrt --idle 0`)
    std::string netns;              // run inside it (`ip netns exec NS ...`)
    std::string output_path;        // stdout + stderr; empty: /dev/null
    // run_command: a signal kills the command and throws Interrupted. Off
    // for teardown commands, which must finish after a Ctrl-C.
    bool interruptible = true;
};

struct ProcessError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ChildProcess {
public:
    ChildProcess() = default;
    // Starts the process; throws ProcessError when fork fails.
    explicit ChildProcess(const ProcessSpec& spec);
    ~ChildProcess();
    ChildProcess(ChildProcess&& other) noexcept;
    ChildProcess& operator=(ChildProcess&& other) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return pid_; }
    const std::string& name() const { return name_; }
    const std::string& output_path() const { return output_path_; }
    bool running();
    // Sends `sig`, waits up to `timeout_s`, then SIGKILL. Returns the wait
    // status as a shell would: the exit code, or 128 + signal.
    int stop(int sig = SIGTERM, double timeout_s = 5.0);
    // Waits for the process to exit by itself; nullopt on timeout.
    std::optional<int> wait_exit(double timeout_s);

private:
    bool reap(bool block);
    void forget();

    pid_t pid_ = -1;
    int status_ = -1;
    std::string name_;
    std::string output_path_;
};

struct CommandResult {
    int status = -1;  // exit code, or 128 + signal, or 124 on timeout
    std::string output;
    bool ok() const { return status == 0; }
};

// Runs a command to completion and captures its output (stdout + stderr).
// Throws Interrupted on a signal (after killing the command).
CommandResult run_command(const ProcessSpec& spec, double timeout_s = 30.0);

// Like run_command, but throws ProcessError with the output on failure.
std::string run_checked(const ProcessSpec& spec, double timeout_s = 30.0);

// The last non-empty line of a log file (for "n/a: <why>" cells).
std::string last_line_of(const std::string& path);
// The first match of `regex` in a log file, "" if none.
std::string first_match_in(const std::string& path, const std::string& regex);

// Is `program` an executable in PATH (or a path to one)?
std::optional<std::string> find_program(const std::string& program);

// SIGKILL every still-registered child; async-signal-safe.
void kill_registered_children();

}  // namespace vnet::bench
