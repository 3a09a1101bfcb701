// Helpers shared by the vhost-user unit tests: sockets, memfds, eventfds and
// fd accounting.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "common/unique_fd.hpp"

namespace vnet::vhost_user::test {

inline std::pair<UniqueFd, UniqueFd> make_socket_pair() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return {};
    }
    return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

inline UniqueFd make_memfd(uint64_t size, unsigned extra_flags = 0) {
    UniqueFd fd(::memfd_create("vnet-test", MFD_CLOEXEC | extra_flags));
    if (fd && ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
        fd.reset();
    }
    return fd;
}

// A memfd as QEMU makes its dirty log: sized, then sealed with `seals`
// (QEMU: F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL).
inline UniqueFd make_sealed_memfd(uint64_t size,
                                  int seals = F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) {
    UniqueFd fd = make_memfd(size, MFD_ALLOW_SEALING);
    if (fd && ::fcntl(fd.get(), F_ADD_SEALS, seals) != 0) {
        fd.reset();
    }
    return fd;
}

inline UniqueFd make_eventfd() {
    return UniqueFd(::eventfd(0, EFD_CLOEXEC));
}

inline bool fd_is_open(int fd) {
    return ::fcntl(fd, F_GETFD) >= 0;
}

inline int open_fd_count() {
    int count = 0;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) {
        return -1;
    }
    while (dirent* e = ::readdir(dir)) {
        if (e->d_name[0] != '.') {
            ++count;
        }
    }
    ::closedir(dir);
    return count - 1;  // the directory stream's own fd
}

// One sendmsg of `len` raw bytes with `fds` attached (any number, for tests
// that break the 8-fd rule). Returns what sendmsg returned.
inline ssize_t send_raw(int sock, const void* bytes, size_t len, std::span<const int> fds = {}) {
    iovec iov{const_cast<void*>(bytes), len};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    return ::sendmsg(sock, &msg, MSG_NOSIGNAL);
}

}  // namespace vnet::vhost_user::test
