#include "io/unix_address.hpp"

#include <sys/socket.h>

#include <cstring>

namespace vnet::io {

bool make_unix_address(const std::string& path, sockaddr_un* out) {
    *out = {};
    out->sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(out->sun_path) ||
        path.find('\0') != std::string::npos) {
        return false;
    }
    std::memcpy(out->sun_path, path.c_str(), path.size() + 1);
    return true;
}

}  // namespace vnet::io
