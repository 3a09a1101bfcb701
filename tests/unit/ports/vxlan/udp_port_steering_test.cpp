// UdpPortSteering in a network namespace of the test's own (own_netns.hpp):
// a datagram for the steered port reaches the steering socket, not the one
// bound there, until the steering is destroyed. Needs root (CAP_NET_ADMIN,
// CAP_BPF), as the unit tests run in CI.
#include "ports/vxlan/udp_port_steering.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/unique_fd.hpp"
#include "ports/setup_error.hpp"
#include "unit/ports/vxlan/own_netns.hpp"

namespace vnet::ports {
namespace {

constexpr uint16_t kSteeredPort = 4789;  // the port the "kernel device" binds
constexpr uint16_t kOwnPort = 4790;      // where vnetd's socket is bound

using test::in_own_netns;

UniqueFd bound_udp(const char* address, uint16_t port) {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, address, &a.sin_addr);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0)
        << address << ":" << port << ": " << std::strerror(errno);
    return fd;
}

void send_to(const char* address, uint16_t port, const std::string& payload) {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, address, &a.sin_addr);
    ASSERT_EQ(::sendto(fd.get(), payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&a),
                       sizeof(a)),
              static_cast<ssize_t>(payload.size()));
}

// What `fd` has queued, one datagram ("" when nothing: loopback delivers
// within the sendto, so nothing more will come).
std::string take(const UniqueFd& fd) {
    char buf[256];
    const ssize_t n = ::recv(fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

TEST(UdpPortSteering, the_steered_port_reaches_the_steering_socket_until_it_is_destroyed) {
    in_own_netns([] {
        UniqueFd device = bound_udp("0.0.0.0", kSteeredPort);  // as the vxlan device binds it
        UniqueFd own = bound_udp("127.0.0.1", kOwnPort);
        {
            UdpPortSteering steering("vxlan uplink 'up0'", own.get(), kSteeredPort, "");
            EXPECT_NE(steering.program_id(), 0u);
            send_to("127.0.0.1", kSteeredPort, "steered");
            EXPECT_EQ(take(own), "steered");
            EXPECT_EQ(take(device), "");
            send_to("127.0.0.1", 4791, "other port");  // nobody's: not steered
            EXPECT_EQ(take(own), "");
        }
        send_to("127.0.0.1", kSteeredPort, "after");
        EXPECT_EQ(take(device), "after");
        EXPECT_EQ(take(own), "");
    });
}

TEST(UdpPortSteering, a_local_address_steers_only_datagrams_to_it) {
    in_own_netns([] {
        UniqueFd device = bound_udp("0.0.0.0", kSteeredPort);
        UniqueFd own = bound_udp("127.0.0.1", kOwnPort);
        UdpPortSteering steering("vxlan uplink 'up0'", own.get(), kSteeredPort, "127.0.0.2");
        send_to("127.0.0.2", kSteeredPort, "to .2");
        send_to("127.0.0.1", kSteeredPort, "to .1");
        EXPECT_EQ(take(own), "to .2");
        EXPECT_EQ(take(device), "to .1");
    });
}

TEST(UdpPortSteering, a_bad_address_or_port_is_refused_before_any_system_call) {
    auto message = [](uint16_t port, const std::string& address) {
        try {
            UdpPortSteering steering("vxlan uplink 'up0'", -1, port, address);
        } catch (const PortSetupError& e) {
            EXPECT_EQ(e.error_number(), 0);
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(4789, "10.0.0"),
              "vxlan uplink 'up0': '10.0.0' is not an IPv4 or IPv6 address");
    EXPECT_EQ(message(0, ""), "vxlan uplink 'up0': steering needs a UDP port, not 0");
}

}  // namespace
}  // namespace vnet::ports
