#include "control/lifecycle/upgrade/successor.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace vnet::control::upgrade {

std::string current_binary() {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) {
        throw std::runtime_error(std::string("upgrade: readlink /proc/self/exe: ") +
                                 std::strerror(errno));
    }
    std::string path(buf, static_cast<size_t>(n));
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) {
        path.resize(path.size() - kDeleted.size());
    }
    return path;
}

std::vector<std::string> own_arguments() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    for (size_t start = 0; start < all.size();) {
        const size_t end = all.find('\0', start);
        args.push_back(all.substr(start, end == std::string::npos ? end : end - start));
        start = end == std::string::npos ? all.size() : end + 1;
    }
    std::vector<std::string> out;
    for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--takeover-fd") {
            ++i;  // and its value
            continue;
        }
        if (args[i].starts_with("--takeover-fd=")) {
            continue;
        }
        out.push_back(args[i]);
    }
    return out;
}

Successor start_successor(const std::string& binary, const std::vector<std::string>& arguments) {
    if (::access(binary.c_str(), X_OK) != 0) {
        throw std::runtime_error("cannot execute " + binary + ": " + std::strerror(errno));
    }
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
        throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    }
    UniqueFd ours(ends[0]);
    UniqueFd theirs(ends[1]);
    // Everything the child needs is made before fork: after it, in a
    // process with threads, only async-signal-safe calls are allowed.
    std::vector<std::string> argv_text{binary};
    argv_text.insert(argv_text.end(), arguments.begin(), arguments.end());
    argv_text.push_back("--takeover-fd");
    argv_text.push_back(std::to_string(theirs.get()));
    std::vector<char*> argv;
    for (std::string& a : argv_text) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
        if (std::strncmp(*e, "WATCHDOG_PID=", 13) != 0) {
            envp.push_back(*e);
        }
    }
    envp.push_back(nullptr);
    const int child_end = theirs.get();
    const pid_t pid = ::fork();
    if (pid < 0) {
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        // Not even an fd some library made without O_CLOEXEC (an io_uring
        // ring holding our taps) may cross exec: only 0, 1, 2 and ours.
        ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
        ::fcntl(child_end, F_SETFD, 0);
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }
    return Successor{pid, HandoverLink(std::move(ours))};
}

std::string reap_successor(pid_t pid, std::chrono::milliseconds grace) {
    const auto deadline = std::chrono::steady_clock::now() + grace;
    int status = 0;
    pid_t got;
    while ((got = ::waitpid(pid, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (got == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return "still running after " + std::to_string(grace.count()) + " ms, killed";
    }
    if (got < 0) {
        return std::string("waitpid: ") + std::strerror(errno);
    }
    if (WIFEXITED(status)) {
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    return "killed by signal " + std::to_string(WTERMSIG(status));
}

}  // namespace vnet::control::upgrade
