// UnixListener: a listening unix stream socket bound at a path, and the
// owner of that path. One way to make a server socket for every part (the
// vhost-user sockets, the control socket):
//
// - A socket file nobody listens on is left over from a crash and is
//   removed; a live socket or any other kind of file is someone else's and
//   an error.
// - The socket gets its mode at creation (bind under a umask), so there is
//   no moment in which it has the default permissions. A socket file is
//   always created owned by its creator, so one with another owner or
//   group is made under a private name in the same directory, given its
//   owner and group, set listening, and only then renamed to its path
//   (renameat2 RENAME_NOREPLACE): at the path it appears listening, with
//   its mode, owner and group, and is never changed after.
// - Destruction removes the path only if it is still the socket we made
//   (another process may have replaced it since).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/unique_fd.hpp"

namespace vnet::io {

// Who may use a socket file. Unset fields keep what bind gives: the umask's
// mode, the creator's user and group.
struct SocketAccess {
    std::optional<mode_t> mode = {};
    std::optional<uid_t> owner = {};
    std::optional<gid_t> group = {};
};

class UnixListener {
public:
    UnixListener() = default;
    // Binds and listens, non-blocking and close-on-exec. Throws
    // std::system_error naming the path (start-up and control-plane only).
    UnixListener(std::string path, const SocketAccess& access, int backlog = 16);
    // Adopts a socket a manager already bound and listens on (the back-end
    // convention --fd=FDNUM); `name` only names it in errors, and the path
    // is never removed. Throws std::system_error if `fd` is not listening
    // (the fd is then still the caller's).
    static UnixListener adopt(int fd, std::string name);
    // Upgrade in place: adopts the socket at `path` that the vnetd we replace
    // made and handed over; the path is then ours to remove as if we had
    // made it. Throws like adopt().
    static UnixListener adopt_handed_over(int fd, std::string path);
    // Upgrade in place, the other side: our successor serves the socket
    // now. Closes our fd and leaves the path where it is.
    void hand_over();
    ~UnixListener();
    UnixListener(UnixListener&& other) noexcept;
    UnixListener& operator=(UnixListener&& other) noexcept;
    UnixListener(const UnixListener&) = delete;
    UnixListener& operator=(const UnixListener&) = delete;

    int fd() const { return fd_.get(); }
    const std::string& path() const { return path_; }
    explicit operator bool() const { return static_cast<bool>(fd_); }

private:
    void remove_if_ours();

    std::string path_;
    UniqueFd fd_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
};

}  // namespace vnet::io
