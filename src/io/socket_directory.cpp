#include "io/socket_directory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace vnet::io {
namespace {

// Makes `dir` with exactly `mode` (whatever the umask) and `group`;
// false if it existed already.
bool make_directory(const std::string& dir, mode_t mode, std::optional<gid_t> group) {
    if (::mkdir(dir.c_str(), mode) != 0) {
        if (errno == EEXIST) {
            return false;
        }
        throw std::system_error(errno, std::generic_category(), "mkdir " + dir);
    }
    if (group && ::chown(dir.c_str(), static_cast<uid_t>(-1), *group) != 0) {
        throw std::system_error(errno, std::generic_category(), "chown " + dir);
    }
    if (::chmod(dir.c_str(), mode) != 0) {
        throw std::system_error(errno, std::generic_category(), "chmod " + dir);
    }
    return true;
}

}  // namespace

mode_t socket_directory_mode(const SocketAccess& access) {
    const bool for_group_only =
        access.group && !access.owner && access.mode && (*access.mode & 07) == 0;
    return for_group_only ? 0750 : 0755;
}

void make_socket_directory(const std::string& socket_path, const SocketAccess& access) {
    const size_t slash = socket_path.rfind('/');
    if (slash == std::string::npos || slash == 0) {
        return;  // in the working directory or in /
    }
    const std::string dir = socket_path.substr(0, slash);
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
        return;
    }
    // Every missing directory above it first, each for anyone to search.
    for (size_t at = dir.find('/', 1); at != std::string::npos; at = dir.find('/', at + 1)) {
        make_directory(dir.substr(0, at), 0755, std::nullopt);
    }
    make_directory(dir, socket_directory_mode(access), access.group);
}

}  // namespace vnet::io
