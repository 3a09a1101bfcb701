#include "cni/device_info.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cni/cni_error.hpp"

namespace vnet::cni {

nlohmann::json vhost_user_device_info(const std::string& socket_path, bool vnetd_is_client) {
    return {
        {"type", "vhost-user"},
        {"version", "1.1.0"},
        {"vhost-user", {{"mode", vnetd_is_client ? "server" : "client"}, {"path", socket_path}}}};
}

void write_device_info(const std::string& path, const nlohmann::json& info) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << info.dump(2) << "\n";
        if (!out) {
            throw CniError(ErrorCode::io_failure,
                           "writing device info " + tmp + ": " + std::strerror(errno));
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        std::remove(tmp.c_str());
        throw CniError(ErrorCode::io_failure,
                       "writing device info " + path + ": " + std::strerror(err));
    }
}

}  // namespace vnet::cni
