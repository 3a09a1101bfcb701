#include "io/eventfd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace vnet::io {

bool is_eventfd(int fd) {
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
        return false;
    }
    // eventfds are anonymous inodes: never a regular file, socket, fifo or device.
    if (S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode) ||
        S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode)) {
        return false;
    }
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    UniqueFd info(::open(path, O_RDONLY | O_CLOEXEC));
    if (!info) {
        return false;
    }
    char text[512];
    ssize_t n = ::read(info.get(), text, sizeof text - 1);
    if (n <= 0) {
        return false;
    }
    text[n] = '\0';
    return std::strstr(text, "eventfd-count:") != nullptr;
}

bool set_nonblocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) {
        return false;
    }
    return (flags & O_NONBLOCK) != 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

UniqueFd make_eventfd() {
    UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!fd) {
        throw std::system_error(errno, std::generic_category(), "eventfd");
    }
    return fd;
}

bool signal_eventfd(int fd) {
    const uint64_t one = 1;
    for (;;) {
        ssize_t n = ::write(fd, &one, sizeof one);
        if (n == sizeof one) {
            return true;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return n < 0 && errno == EAGAIN;
    }
}

uint64_t drain_eventfd(int fd) {
    uint64_t value = 0;
    for (;;) {
        ssize_t n = ::read(fd, &value, sizeof value);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return n == sizeof value ? value : 0;
    }
}

bool wait_eventfd(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
}

}  // namespace vnet::io
