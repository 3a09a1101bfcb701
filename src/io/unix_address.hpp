// sockaddr_un from a path, refusing paths that do not fit (108 bytes with
// the terminator) instead of silently truncating them.
#pragma once

#include <sys/un.h>

#include <string>

namespace vnet::io {

bool make_unix_address(const std::string& path, sockaddr_un* out);

}  // namespace vnet::io
