#include "ports/vxlan/vxlan_socket.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/udp.h>

#include <cerrno>
#include <cstring>

#include "ports/setup_error.hpp"

namespace vnet::ports {
namespace {

socklen_t address_length(const sockaddr_storage& a) {
    return a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void set_option(int fd, int level, int name, int value, std::string_view device,
                std::string_view step, std::string_view hint = {}) {
    if (::setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
        throw_setup_error(device, step, errno, hint);
    }
}

// SO_*BUFFORCE passes the sysctl cap with CAP_NET_ADMIN; without it the
// plain option gets what the cap allows, which is still a working socket.
void size_buffer(int fd, int force_name, int name, int bytes, std::string_view device,
                 std::string_view step) {
    if (bytes <= 0) {
        return;
    }
    if (::setsockopt(fd, SOL_SOCKET, force_name, &bytes, sizeof(bytes)) == 0) {
        return;
    }
    set_option(fd, SOL_SOCKET, name, bytes, device, step);
}

// A send lane's receive side: a classic BPF program that keeps no byte of
// any datagram (the kernel runs it before queueing one), locked so it
// stays; and the smallest buffer the kernel allows (it rounds 1 up).
void refuse_every_datagram(int fd, std::string_view device) {
    sock_filter drop_all = BPF_STMT(BPF_RET | BPF_K, 0);
    const sock_fprog program{1, &drop_all};
    if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) != 0) {
        throw_setup_error(device, "setsockopt(SO_ATTACH_FILTER)", errno);
    }
    set_option(fd, SOL_SOCKET, SO_LOCK_FILTER, 1, device, "setsockopt(SO_LOCK_FILTER)");
    set_option(fd, SOL_SOCKET, SO_RCVBUF, 1, device, "setsockopt(SO_RCVBUF)");
}

}  // namespace

VxlanSocket::VxlanSocket(std::string_view device, const VxlanSocketOptions& options) {
    const int family = options.local.ss_family;
    if (family != AF_INET && family != AF_INET6) {
        throw_option_error(device, "the local VTEP address is neither IPv4 nor IPv6");
    }
    fd_.reset(::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP));
    if (!fd_) {
        throw_setup_error(device, "socket(UDP)", errno, "could not open the VXLAN UDP socket");
    }
    if (family == AF_INET6) {
        set_option(fd_.get(), IPPROTO_IPV6, IPV6_V6ONLY, 1, device, "setsockopt(IPV6_V6ONLY)");
    }
    size_buffer(fd_.get(), SO_SNDBUFFORCE, SO_SNDBUF, options.send_buffer_bytes, device,
                "setsockopt(SO_SNDBUF)");
    if (options.send_only) {
        refuse_every_datagram(fd_.get(), device);
    } else {
        size_buffer(fd_.get(), SO_RCVBUFFORCE, SO_RCVBUF, options.receive_buffer_bytes, device,
                    "setsockopt(SO_RCVBUF)");
        set_option(fd_.get(), SOL_UDP, UDP_GRO, 1, device, "setsockopt(UDP_GRO)",
                   "the kernel needs UDP GRO on sockets (Linux 5.0 or later)");
    }
    if (::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&options.local),
               address_length(options.local)) != 0) {
        const int e = errno;
        throw_setup_error(device, "bind(local VTEP address)", e,
                          e == EADDRINUSE      ? "another socket (a kernel vxlan device?) holds "
                                                 "this address and port"
                          : e == EADDRNOTAVAIL ? "the local address is not on this host"
                                               : std::string_view{});
    }
    socklen_t len = sizeof(local_);
    if (::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&local_), &len) != 0) {
        throw_setup_error(device, "getsockname", errno);
    }
}

uint16_t VxlanSocket::local_port() const {
    if (local_.ss_family == AF_INET6) {
        return ntohs(reinterpret_cast<const sockaddr_in6&>(local_).sin6_port);
    }
    return ntohs(reinterpret_cast<const sockaddr_in&>(local_).sin_port);
}

sockaddr_storage make_vxlan_address(std::string_view device, const std::string& address,
                                    uint16_t port) {
    sockaddr_storage out{};
    auto& v4 = reinterpret_cast<sockaddr_in&>(out);
    if (::inet_pton(AF_INET, address.c_str(), &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(port);
        return out;
    }
    out = sockaddr_storage{};
    auto& v6 = reinterpret_cast<sockaddr_in6&>(out);
    if (::inet_pton(AF_INET6, address.c_str(), &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(port);
        return out;
    }
    throw_option_error(device, "'" + address + "' is not an IPv4 or IPv6 address");
}

}  // namespace vnet::ports
