#include "frontend/event_fd.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace vnet::frontend {

UniqueFd make_event_fd() {
    UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!fd) {
        throw std::system_error(errno, std::generic_category(), "eventfd");
    }
    return fd;
}

bool signal_event_fd(int fd) {
    const uint64_t one = 1;
    // EAGAIN means the counter is saturated: the device is notified anyway.
    return ::write(fd, &one, sizeof one) == sizeof one || errno == EAGAIN;
}

uint64_t drain_event_fd(int fd) {
    uint64_t value = 0;
    return ::read(fd, &value, sizeof value) == sizeof value ? value : 0;
}

bool wait_event_fd(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
}

}  // namespace vnet::frontend
