// The directories a server socket's path needs, made when missing: a fresh
// host has no /run/vnetd, and a first `vnetd --socket-path
// /run/vnetd/vm0.sock` must not fail on it. Every listening socket
// (vhost-user ports, the control socket) goes through UnixListener, which
// calls this, so no caller makes directories of its own.
//
// A directory that exists is left as its owner made it. A missing one is
// made 0755, owned by vnetd's user; the socket's own directory also gets
// the socket's group, and is closed to others (0750) when the socket
// itself grants others nothing and is for a group (socket_group = "kvm",
// socket_mode = "0660": QEMU as libvirt-qemu:kvm can search it, nobody
// else can). A socket for another owner keeps 0755: that owner is "other"
// to a directory vnetd owns.
#pragma once

#include <string>

#include "io/unix_listener.hpp"

namespace vnet::io {

// The mode the directory of a socket with `access` is made with.
mode_t socket_directory_mode(const SocketAccess& access);

// Makes every missing directory above `socket_path`. Throws
// std::system_error naming the directory.
void make_socket_directory(const std::string& socket_path, const SocketAccess& access);

}  // namespace vnet::io
