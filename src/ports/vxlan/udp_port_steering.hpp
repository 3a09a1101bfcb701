// UdpPortSteering: bpf/udp_port_steer.bpf.o attached to the calling
// thread's network namespace (BPF_PROG_TYPE_SK_LOOKUP), so that every UDP
// datagram for one port, on one local address or any, is delivered to one
// socket of vnetd's even where another socket is bound to that port.
//
// Why: in EVPN mode the kernel's vxlan device stays, because FRR's zebra
// programs its forwarding table (the remote MACs and VTEPs vnetd reads),
// and it binds the VXLAN port. vnetd receives the tunnel on its own
// socket, coalesced by UDP_GRO (a burst a system call where the device
// costs the kernel's whole path per frame: docs/BENCHMARKS.md, "Two hosts
// over VXLAN"). The steering is per namespace and per port: nothing else
// in the namespace may receive on that port (address) while it is on.
//
// The kernel runs the program; vnetd loads it, points it at the socket and
// the port, and detaches it in the destructor (the link is vnetd's: it also
// goes when vnetd dies, and the vxlan device receives again).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

struct bpf_link;
struct bpf_object;

namespace vnet::ports {

class UdpPortSteering {
public:
    // `owner` names it in messages ("vxlan uplink 'up0'"); `socket_fd` is a
    // UDP socket of the local address's family (the map holds its own
    // reference: the caller may close it later, steering then stops
    // matching); `local_address` is an IPv4 or IPv6 literal, empty for any.
    // Throws PortSetupError naming the step (a bad address: before any
    // system call).
    UdpPortSteering(std::string owner, int socket_fd, uint16_t port,
                    const std::string& local_address);
    ~UdpPortSteering();
    UdpPortSteering(const UdpPortSteering&) = delete;
    UdpPortSteering& operator=(const UdpPortSteering&) = delete;

    uint16_t port() const { return port_; }
    unsigned program_id() const { return program_id_; }

private:
    struct ObjectCloser {
        void operator()(bpf_object* object) const noexcept;
    };
    struct LinkCloser {
        void operator()(bpf_link* link) const noexcept;
    };

    std::string owner_;
    uint16_t port_;
    std::unique_ptr<bpf_object, ObjectCloser> object_;
    std::unique_ptr<bpf_link, LinkCloser> link_;
    unsigned program_id_ = 0;
};

}  // namespace vnet::ports
