#include "ports/tap/xdp_object_path.hpp"

#include <unistd.h>

#include <array>
#include <climits>
#include <filesystem>

namespace vnet::ports {
namespace {

bool is_file(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

// The running program's directory; empty if /proc is not there.
std::string binary_directory() {
    std::array<char, PATH_MAX> buf{};
    const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    if (n <= 0) {
        return {};
    }
    return std::filesystem::path(std::string(buf.data(), static_cast<size_t>(n)))
        .parent_path()
        .string();
}

}  // namespace

std::vector<std::string> shipped_xdp_object_dirs() {
    const std::string bin = binary_directory();
    if (bin.empty()) {
        return {};
    }
    return {
        (std::filesystem::path(bin) / VNET_BPF_DIR_FROM_BINARY).lexically_normal().string(),
        (std::filesystem::path(bin) / ".." / "bpf").lexically_normal().string(),
    };
}

std::string find_xdp_object(const std::string& file) {
    if (file.empty() || file.find('/') != std::string::npos || is_file(file)) {
        return file;
    }
    for (const std::string& dir : shipped_xdp_object_dirs()) {
        for (const std::string& name : {file, file + ".bpf.o"}) {
            const std::string candidate = dir + "/" + name;
            if (is_file(candidate)) {
                return candidate;
            }
        }
    }
    return file;
}

}  // namespace vnet::ports
