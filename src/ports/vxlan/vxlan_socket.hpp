// VxlanSocket: the UDP socket the user-space VXLAN datapath sends and
// receives on (vxlan_send_batch.hpp, vxlan_receive_batch.hpp), bound to the
// local VTEP address and port. Set up for that datapath:
//  * nonblocking: the worker polls it, never sleeps in a call;
//  * UDP_GRO on: the kernel hands a peer's burst over as one message;
//  * SO_RCVBUF / SO_SNDBUF sized for bursts (SO_*BUFFORCE first, which
//    passes net.core.rmem_max/wmem_max with CAP_NET_ADMIN);
//  * IPV6_V6ONLY on an IPv6 address, so a v6 VTEP never sees v4-mapped
//    peers (one address family per overlay).
// A send-only socket (a send lane: one more UDP source port for the
// inner flows' spread, vxlan_socket_port.hpp) is never read: nothing is
// addressed to its port, and a stray datagram is dropped by a socket
// filter before it takes any buffer; it has no UDP_GRO, and the smallest
// receive buffer.
// Errors are PortSetupError naming the device and the step.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/unique_fd.hpp"

namespace vnet::ports {

struct VxlanSocketOptions {
    // AF_INET or AF_INET6, with the UDP port (4789 for VXLAN; 0: any, for
    // tests).
    sockaddr_storage local{};
    int receive_buffer_bytes = 4 << 20;
    int send_buffer_bytes = 4 << 20;
    bool send_only = false;  // never read: receive_buffer_bytes is ignored
};

class VxlanSocket {
public:
    // `device` names the port in errors, as logs do ("vxlan 'vx100'").
    VxlanSocket(std::string_view device, const VxlanSocketOptions& options);

    int fd() const { return fd_.get(); }
    // The address bound, with the port the kernel picked if it was 0.
    const sockaddr_storage& local() const { return local_; }
    uint16_t local_port() const;

private:
    UniqueFd fd_;
    sockaddr_storage local_{};
};

// "192.0.2.1" or "2001:db8::1" and a port, as a sockaddr_storage; throws
// PortSetupError (an option error naming `device`) when `address` is neither.
sockaddr_storage make_vxlan_address(std::string_view device, const std::string& address,
                                    uint16_t port);

}  // namespace vnet::ports
