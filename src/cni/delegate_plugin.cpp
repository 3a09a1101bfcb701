#include "cni/delegate_plugin.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cni/cni_error.hpp"
#include "cni/cni_version.hpp"
#include "common/unique_fd.hpp"

extern char** environ;

namespace vnet::cni {

using nlohmann::json;

namespace {

[[noreturn]] void io_error(const std::string& what, int err) {
    throw CniError(ErrorCode::io_failure, what + ": " + std::strerror(err));
}

std::string find_plugin(const DelegateCall& call) {
    std::string dirs;
    for (const std::string& dir : call.search_path) {
        const std::string candidate = dir + "/" + call.type;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        dirs += (dirs.empty() ? "" : ":") + dir;
    }
    throw CniError(ErrorCode::invalid_config,
                   "failed to find plugin \"" + call.type + "\" in path [" + dirs + "]");
}

std::vector<std::string> environment_for(const DelegateCall& call) {
    std::vector<std::string> out;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e);
        const std::string key = entry.substr(0, entry.find('='));
        if (call.env.count(key) == 0) {
            out.push_back(entry);
        }
    }
    for (const auto& [k, v] : call.env) {
        out.push_back(k + "=" + v);
    }
    return out;
}

}  // namespace

json run_delegate(const DelegateCall& call) {
    const std::string path = find_plugin(call);
    const std::vector<std::string> env = environment_for(call);
    std::vector<char*> envp;
    for (const std::string& e : env) {
        envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);

    int in_pipe[2];
    int out_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
        io_error("pipe for " + call.type, errno);
    }
    UniqueFd in_read(in_pipe[0]);
    UniqueFd in_write(in_pipe[1]);
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
        io_error("pipe for " + call.type, errno);
    }
    UniqueFd out_read(out_pipe[0]);
    UniqueFd out_write(out_pipe[1]);

    const pid_t pid = ::fork();
    if (pid < 0) {
        io_error("fork for " + call.type, errno);
    }
    if (pid == 0) {
        // The child: only async-signal-safe calls until exec.
        ::dup2(in_read.get(), STDIN_FILENO);
        ::dup2(out_write.get(), STDOUT_FILENO);
        char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
        ::execve(path.c_str(), argv, envp.data());
        ::_exit(127);
    }
    in_read.reset();
    out_write.reset();
    const std::string input = call.config.dump();
    for (size_t sent = 0; sent < input.size();) {
        const ssize_t n = ::write(in_write.get(), input.data() + sent, input.size() - sent);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;  // it closed stdin early: its exit status tells
        }
        sent += static_cast<size_t>(n);
    }
    in_write.reset();
    std::string output;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(out_read.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        output.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const json parsed = output.empty() ? json() : json::parse(output, nullptr, false);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (parsed.is_object() && parsed.contains("code") && parsed["code"].is_number_integer()) {
            throw CniError(parsed["code"].get<int>(), parsed.value("msg", std::string()),
                           parsed.value("details", std::string()));
        }
        throw CniError(ErrorCode::io_failure,
                       call.type + " failed (" +
                           (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                              : "signal " + std::to_string(WTERMSIG(status))) +
                           ")" + (output.empty() ? "" : ": " + output));
    }
    if (parsed.is_discarded()) {
        throw CniError(ErrorCode::decode_failure,
                       call.type + " printed something that is not JSON: " + output);
    }
    return parsed;
}

json config_for_delegate(const DelegateCall& version_call, const json& config) {
    const std::string wanted = config.value("cniVersion", std::string(kLatestVersion));
    DelegateCall ask = version_call;
    ask.env["CNI_COMMAND"] = "VERSION";
    ask.config = json{{"cniVersion", wanted}};
    const json answer = run_delegate(ask);
    std::string best;
    for (const json& v : answer.value("supportedVersions", json::array())) {
        if (!v.is_string()) {
            continue;
        }
        const std::string s = v.get<std::string>();
        if (compare_versions(s, wanted) <= 0 && (best.empty() || compare_versions(s, best) > 0)) {
            best = s;
        }
    }
    if (best.empty()) {
        throw CniError(ErrorCode::incompatible_version,
                       version_call.type + " speaks none of the versions up to " + wanted);
    }
    json out = config;
    out["cniVersion"] = best;
    return out;
}

}  // namespace vnet::cni
