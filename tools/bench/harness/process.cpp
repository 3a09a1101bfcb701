#include "harness/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"

namespace vnet::bench {
namespace {

// PIDs this run started and has not reaped: the second-signal handler
// SIGKILLs them. A fixed array of atomics, so the handler needs no lock.
std::array<std::atomic<pid_t>, 64> g_children{};

void register_child(pid_t pid) {
    for (auto& slot : g_children) {
        pid_t expected = 0;
        if (slot.compare_exchange_strong(expected, pid)) {
            return;
        }
    }
}

void unregister_child(pid_t pid) {
    for (auto& slot : g_children) {
        pid_t expected = pid;
        if (slot.compare_exchange_strong(expected, 0)) {
            return;
        }
    }
}

int shell_status(int wstatus) {
    if (WIFEXITED(wstatus)) {
        return WEXITSTATUS(wstatus);
    }
    if (WIFSIGNALED(wstatus)) {
        return 128 + WTERMSIG(wstatus);
    }
    return -1;
}

std::vector<std::string> full_argv(const ProcessSpec& spec) {
    std::vector<std::string> argv;
    if (!spec.netns.empty()) {
        argv = {"ip", "netns", "exec", spec.netns};
    }
    argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
    return argv;
}

void log_start(const ProcessSpec& spec, const std::vector<std::string>& argv, pid_t pid) {
    std::string where = spec.cpu ? "cpu " + std::to_string(*spec.cpu) : "any cpu";
    if (spec.idle_priority) {
        where += ", SCHED_IDLE";
    }
    blog().debug("run [{}] pid {} ({}{}): {}", spec.name.empty() ? argv[0] : spec.name, pid, where,
                 spec.output_path.empty() ? "" : ", output " + spec.output_path, shell_join(argv));
}

// In the child after fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const ProcessSpec& spec, char* const* argv, int out_fd) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (spec.cpu) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(*spec.cpu, &set);
        sched_setaffinity(0, sizeof(set), &set);
    }
    if (spec.idle_priority) {
        const sched_param param{};
        sched_setscheduler(0, SCHED_IDLE, &param);
    }
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) {
        dup2(in, STDIN_FILENO);
    }
    if (out_fd >= 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(out_fd, STDERR_FILENO);
    }
    execvp(argv[0], argv);
    const char msg[] = "vnet-bench: exec failed\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(127);
}

pid_t spawn(const ProcessSpec& spec, int out_fd) {
    std::vector<std::string> args = full_argv(spec);
    std::vector<char*> argv;
    for (std::string& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
        throw ProcessError("fork for " + args[0] + ": " + std::strerror(errno));
    }
    if (pid == 0) {
        exec_child(spec, argv.data(), out_fd);
    }
    register_child(pid);
    log_start(spec, args, pid);
    return pid;
}

}  // namespace

ChildProcess::ChildProcess(const ProcessSpec& spec)
    : name_(spec.name.empty() ? spec.argv.at(0) : spec.name), output_path_(spec.output_path) {
    int out_fd = -1;
    if (!spec.output_path.empty()) {
        out_fd = open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out_fd < 0) {
            throw ProcessError("open " + spec.output_path + ": " + std::strerror(errno));
        }
    }
    try {
        pid_ = spawn(spec, out_fd);
    } catch (...) {
        if (out_fd >= 0) {
            close(out_fd);
        }
        throw;
    }
    if (out_fd >= 0) {
        close(out_fd);
    }
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0) {
        stop(SIGTERM, 3.0);
    }
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      status_(other.status_),
      name_(std::move(other.name_)),
      output_path_(std::move(other.output_path_)) {
    other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
    if (this != &other) {
        if (pid_ > 0) {
            stop(SIGTERM, 3.0);
        }
        pid_ = other.pid_;
        status_ = other.status_;
        name_ = std::move(other.name_);
        output_path_ = std::move(other.output_path_);
        other.pid_ = -1;
    }
    return *this;
}

bool ChildProcess::reap(bool block) {
    if (pid_ <= 0) {
        return true;
    }
    int wstatus = 0;
    const pid_t r = waitpid(pid_, &wstatus, block ? 0 : WNOHANG);
    if (r == pid_) {
        status_ = shell_status(wstatus);
        blog().debug("[{}] pid {} exited with {}", name_, pid_, status_);
        forget();
        return true;
    }
    if (r < 0 && errno == ECHILD) {
        forget();
        return true;
    }
    return false;
}

void ChildProcess::forget() {
    unregister_child(pid_);
    pid_ = -1;
}

bool ChildProcess::running() {
    return !reap(false);
}

std::optional<int> ChildProcess::wait_exit(double timeout_s) {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    while (Clock::now() < end) {
        if (reap(false)) {
            return status_;
        }
        usleep(20000);
    }
    return std::nullopt;
}

int ChildProcess::stop(int sig, double timeout_s) {
    if (pid_ <= 0) {
        return status_;
    }
    if (reap(false)) {
        return status_;
    }
    blog().debug("stop [{}] pid {} with signal {}", name_, pid_, sig);
    kill(pid_, sig);
    if (wait_exit(timeout_s)) {
        return status_;
    }
    blog().warn("[{}] pid {} did not exit {} s after signal {}: SIGKILL", name_, pid_, timeout_s,
                sig);
    kill(pid_, SIGKILL);
    reap(true);
    return status_;
}

CommandResult run_command(const ProcessSpec& spec, double timeout_s) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        throw ProcessError(std::string("pipe: ") + std::strerror(errno));
    }
    pid_t pid;
    try {
        pid = spawn(spec, fds[1]);
    } catch (...) {
        close(fds[0]);
        close(fds[1]);
        throw;
    }
    close(fds[1]);
    CommandResult result;
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    bool timed_out = false;
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        const int n = poll(&p, 1, 50);
        if (n > 0) {
            char buf[4096];
            const ssize_t got = read(fds[0], buf, sizeof(buf));
            if (got > 0) {
                result.output.append(buf, static_cast<size_t>(got));
                continue;
            }
            if (got == 0) {
                break;  // EOF: the command (and anything that inherited the pipe) closed it
            }
        }
        const bool stop_now = spec.interruptible && interrupted();
        if (stop_now || Clock::now() >= end) {
            timed_out = !stop_now;
            kill(pid, SIGKILL);
            break;
        }
    }
    close(fds[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    unregister_child(pid);
    result.status = timed_out ? 124 : shell_status(wstatus);
    blog().debug("  -> exit {}{}", result.status,
                 result.output.empty() ? "" : ": " + result.output.substr(0, 400));
    if (spec.interruptible) {
        throw_if_interrupted();
    }
    return result;
}

std::string run_checked(const ProcessSpec& spec, double timeout_s) {
    CommandResult r = run_command(spec, timeout_s);
    if (!r.ok()) {
        std::string out = r.output;
        while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) {
            out.pop_back();
        }
        throw ProcessError(shell_join(spec.argv) + " failed (exit " + std::to_string(r.status) +
                           ")" + (out.empty() ? "" : ": " + out));
    }
    return r.output;
}

std::string last_line_of(const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) {
            last = line;
        }
    }
    return last;
}

std::string first_match_in(const std::string& path, const std::string& regex) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::smatch m;
    return std::regex_search(text, m, std::regex(regex)) ? m.str() : std::string();
}

std::optional<std::string> find_program(const std::string& program) {
    auto executable = [](const std::string& p) {
        struct stat st;
        return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
    };
    if (program.find('/') != std::string::npos) {
        return executable(program) ? std::optional(program) : std::nullopt;
    }
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t colon = dirs.find(':', start);
        if (colon == std::string::npos) {
            colon = dirs.size();
        }
        const std::string candidate = dirs.substr(start, colon - start) + "/" + program;
        if (executable(candidate)) {
            return candidate;
        }
        start = colon + 1;
    }
    return std::nullopt;
}

void kill_registered_children() {
    for (auto& slot : g_children) {
        const pid_t pid = slot.load(std::memory_order_relaxed);
        if (pid > 0) {
            kill(pid, SIGKILL);
        }
    }
}

}  // namespace vnet::bench
