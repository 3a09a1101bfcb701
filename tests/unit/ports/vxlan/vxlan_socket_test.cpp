// The VXLAN datapath's UDP socket (ports/vxlan/vxlan_socket.hpp): how it is
// set up, and the errors that name what went wrong.
#include "ports/vxlan/vxlan_socket.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/udp.h>

#include <cerrno>
#include <string>

#include "ports/setup_error.hpp"
#include "unit/ports/vxlan/vxlan_frames.hpp"

namespace vnet::ports {
namespace {

int int_option(int fd, int level, int name) {
    int value = -1;
    socklen_t len = sizeof(value);
    EXPECT_EQ(::getsockopt(fd, level, name, &value, &len), 0);
    return value;
}

VxlanSocketOptions options_for(const sockaddr_storage& local) {
    VxlanSocketOptions o;
    o.local = local;
    return o;
}

TEST(VxlanSocket, ipv4_is_nonblocking_with_udp_gro_and_the_buffers_asked_for) {
    VxlanSocketOptions o = options_for(test::ipv4_loopback(0));
    o.receive_buffer_bytes = 1 << 20;
    o.send_buffer_bytes = 1 << 20;
    const VxlanSocket s("vxlan 'vx1'", o);
    EXPECT_NE(s.local_port(), 0);
    EXPECT_EQ(s.local().ss_family, AF_INET);
    EXPECT_NE(::fcntl(s.fd(), F_GETFL) & O_NONBLOCK, 0);
    EXPECT_EQ(int_option(s.fd(), SOL_UDP, UDP_GRO), 1);
    // The kernel doubles what it is asked for (socket(7)); without
    // CAP_NET_ADMIN the sysctl cap may have cut it.
    EXPECT_GE(int_option(s.fd(), SOL_SOCKET, SO_RCVBUF), 1 << 12);
    EXPECT_GE(int_option(s.fd(), SOL_SOCKET, SO_SNDBUF), 1 << 12);
}

TEST(VxlanSocket, ipv6_is_v6_only) {
    const VxlanSocket s("vxlan 'vx1'", options_for(test::ipv6_loopback(0)));
    EXPECT_EQ(s.local().ss_family, AF_INET6);
    EXPECT_NE(s.local_port(), 0);
    EXPECT_EQ(int_option(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY), 1);
}

// A send lane: sends like the others, takes no datagram (its filter drops
// each before it is queued), has no UDP_GRO and the smallest receive buffer.
TEST(VxlanSocket, a_send_only_socket_sends_and_keeps_nothing_it_is_sent) {
    for (const sockaddr_storage& at : {test::ipv4_loopback(0), test::ipv6_loopback(0)}) {
        VxlanSocketOptions o = options_for(at);
        o.send_only = true;
        const VxlanSocket lane("vxlan 'vx1'", o);
        const VxlanSocket other("vxlan 'vx1'", options_for(at));
        EXPECT_EQ(int_option(lane.fd(), SOL_UDP, UDP_GRO), 0);
        EXPECT_LT(int_option(lane.fd(), SOL_SOCKET, SO_RCVBUF), 1 << 13);
        const socklen_t len = at.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
        const char bytes[] = "datagram";
        // lane -> other arrives; other -> lane is dropped.
        ASSERT_EQ(::sendto(lane.fd(), bytes, sizeof(bytes), 0,
                           reinterpret_cast<const sockaddr*>(&other.local()), len),
                  static_cast<ssize_t>(sizeof(bytes)));
        ASSERT_EQ(::sendto(other.fd(), bytes, sizeof(bytes), 0,
                           reinterpret_cast<const sockaddr*>(&lane.local()), len),
                  static_cast<ssize_t>(sizeof(bytes)));
        char got[16];
        EXPECT_EQ(::recv(other.fd(), got, sizeof(got), MSG_DONTWAIT),
                  static_cast<ssize_t>(sizeof(bytes)));
        EXPECT_EQ(::recv(lane.fd(), got, sizeof(got), MSG_DONTWAIT), -1);
        EXPECT_EQ(errno, EAGAIN);
    }
}

TEST(VxlanSocket, an_address_of_no_family_is_an_option_error) {
    try {
        VxlanSocket s("vxlan 'vx1'", VxlanSocketOptions{});
        FAIL() << "expected PortSetupError";
    } catch (const PortSetupError& e) {
        EXPECT_EQ(e.error_number(), 0);
        EXPECT_NE(std::string(e.what()).find("vxlan 'vx1'"), std::string::npos);
    }
}

TEST(VxlanSocket, a_port_in_use_names_the_device_the_step_and_the_errno) {
    const VxlanSocket first("vxlan 'vx1'", options_for(test::ipv4_loopback(0)));
    try {
        VxlanSocket second("vxlan 'vx2'", options_for(first.local()));
        FAIL() << "expected PortSetupError";
    } catch (const PortSetupError& e) {
        EXPECT_EQ(e.error_number(), EADDRINUSE);
        const std::string what = e.what();
        EXPECT_NE(what.find("vxlan 'vx2'"), std::string::npos) << what;
        EXPECT_NE(what.find("bind"), std::string::npos) << what;
        EXPECT_NE(what.find("EADDRINUSE"), std::string::npos) << what;
    }
}

TEST(VxlanAddress, parses_ipv4_and_ipv6_with_the_port) {
    const sockaddr_storage v4 = make_vxlan_address("vxlan 'vx1'", "192.0.2.1", 4789);
    ASSERT_EQ(v4.ss_family, AF_INET);
    const auto& a = reinterpret_cast<const sockaddr_in&>(v4);
    EXPECT_EQ(ntohs(a.sin_port), 4789);
    EXPECT_EQ(ntohl(a.sin_addr.s_addr), 0xc0000201u);
    const sockaddr_storage v6 = make_vxlan_address("vxlan 'vx1'", "2001:db8::1", 4790);
    ASSERT_EQ(v6.ss_family, AF_INET6);
    EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in6&>(v6).sin6_port), 4790);
    EXPECT_THROW(make_vxlan_address("vxlan 'vx1'", "192.0.2.300", 4789), PortSetupError);
    EXPECT_THROW(make_vxlan_address("vxlan 'vx1'", "", 4789), PortSetupError);
}

}  // namespace
}  // namespace vnet::ports
