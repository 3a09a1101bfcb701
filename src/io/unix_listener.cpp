#include "io/unix_listener.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

#include "io/socket_directory.hpp"
#include "io/unix_address.hpp"

namespace vnet::io {
namespace {

[[noreturn]] void fail(int err, const std::string& what) {
    throw std::system_error(err, std::generic_category(), what);
}

void remove_stale_socket(const std::string& path, const sockaddr_un& addr) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        return;  // nothing there
    }
    if (!S_ISSOCK(st.st_mode)) {
        fail(EEXIST, path + " exists and is not a socket");
    }
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (probe &&
        ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
        fail(EADDRINUSE, path + " is in use by a live server");
    }
    ::unlink(path.c_str());
}

// bind() creates the socket file with mode 0777 & ~umask: setting the umask
// around it is the only way to create it with `mode` directly. The umask is
// per process, so this runs on the control thread only (workers create no
// files).
int bind_with_mode(int fd, const sockaddr_un& addr, std::optional<mode_t> mode) {
    if (!mode) {
        return ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    }
    const mode_t old = ::umask(static_cast<mode_t>(~*mode & 0777));
    const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    const int err = errno;
    ::umask(old);
    errno = err;
    return rc;
}

// The socket of `fd` bound at `path` and listening, with `access`'s owner
// and group, made under a private name in the directory of `path` and then
// renamed there. The private name is reached through /proc/self/fd/DIRFD,
// so it fits in a sockaddr_un however long the directory's name is. On
// failure nothing is left behind.
void bind_listening_as_owner(int fd, const std::string& path, const SocketAccess& access,
                             int backlog) {
    static std::atomic<unsigned> serial{0};
    const size_t slash = path.rfind('/');
    const std::string dir =
        slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) {
        fail(errno, "open " + dir + " (the directory of " + path + ")");
    }
    const std::string private_name =
        ".vnetd-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    sockaddr_un addr;
    make_unix_address("/proc/self/fd/" + std::to_string(dir_fd.get()) + "/" + private_name, &addr);
    if (bind_with_mode(fd, addr, access.mode) != 0) {
        fail(errno, "bind " + path + " (as " + dir + "/" + private_name + ")");
    }
    auto undo = [&](const std::string& what) {
        const int err = errno;
        ::unlinkat(dir_fd.get(), private_name.c_str(), 0);
        fail(err, what + " " + path);
    };
    if (::fchownat(dir_fd.get(), private_name.c_str(),
                   access.owner.value_or(static_cast<uid_t>(-1)),
                   access.group.value_or(static_cast<gid_t>(-1)), AT_SYMLINK_NOFOLLOW) != 0) {
        undo("chown");
    }
    if (::listen(fd, backlog) != 0) {
        undo("listen");
    }
    if (::renameat2(dir_fd.get(), private_name.c_str(), dir_fd.get(), name.c_str(),
                    RENAME_NOREPLACE) != 0) {
        undo("rename into place:");
    }
}

}  // namespace

UnixListener::UnixListener(std::string path, const SocketAccess& access, int backlog)
    : path_(std::move(path)) {
    sockaddr_un addr;
    if (!make_unix_address(path_, &addr)) {
        fail(ENAMETOOLONG, "bad socket path '" + path_ + "'");
    }
    make_socket_directory(path_, access);  // a fresh host has no /run/vnetd
    remove_stale_socket(path_, addr);
    fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd_) {
        fail(errno, "socket");
    }
    const bool listening = access.owner || access.group;
    if (listening) {
        bind_listening_as_owner(fd_.get(), path_, access, backlog);
    } else if (bind_with_mode(fd_.get(), addr, access.mode) != 0) {
        fail(errno, "bind " + path_);
    }
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) {
        dev_ = st.st_dev;
        ino_ = st.st_ino;
    }
    if (!listening && ::listen(fd_.get(), backlog) != 0) {
        const int err = errno;
        remove_if_ours();
        fail(err, "listen " + path_);
    }
}

UnixListener UnixListener::adopt(int fd, std::string name) {
    int accepting = 0;
    socklen_t len = sizeof accepting;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0) {
        fail(errno, name + " is not a socket");
    }
    if (!accepting) {
        fail(EINVAL, name + " is not a listening socket");
    }
    UnixListener l;
    l.path_ = std::move(name);
    l.fd_.reset(fd);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    return l;
}

UnixListener UnixListener::adopt_handed_over(int fd, std::string path) {
    UnixListener l = adopt(fd, path);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        l.dev_ = st.st_dev;
        l.ino_ = st.st_ino;
    }
    return l;
}

void UnixListener::hand_over() {
    fd_.reset();
    ino_ = 0;
}

UnixListener::~UnixListener() {
    remove_if_ours();
}

UnixListener::UnixListener(UnixListener&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      dev_(std::exchange(other.dev_, 0)),
      ino_(std::exchange(other.ino_, 0)) {}

UnixListener& UnixListener::operator=(UnixListener&& other) noexcept {
    if (this != &other) {
        remove_if_ours();
        path_ = std::move(other.path_);
        fd_ = std::move(other.fd_);
        dev_ = std::exchange(other.dev_, 0);
        ino_ = std::exchange(other.ino_, 0);
    }
    return *this;
}

void UnixListener::remove_if_ours() {
    if (!fd_ || ino_ == 0) {
        fd_.reset();
        return;
    }
    fd_.reset();
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
        ::unlink(path_.c_str());
    }
    ino_ = 0;
}

}  // namespace vnet::io
