// The metrics endpoint's listen address (metrics_address): HOST:PORT,
// [IPv6]:PORT or :PORT (every address of the host, IPv6 and IPv4), HOST a
// literal address or a name that resolves. Resolved and tried here, before
// the HTTP server is made, so that what cannot work is said in an
// operator's words ("address in use", "bad address") rather than as the
// HTTP library's internals.
#pragma once

#include <sys/socket.h>

#include <string>

namespace vnet::control {

// What the HTTP server binds: a numeric socket address (port 0: any free
// port), IPv4 or IPv6.
struct MetricsListenAddress {
    MetricsListenAddress() : address{}, length(0), dual_stack(false) {}

    sockaddr_storage address;
    socklen_t length;
    // An IPv6 socket that takes IPv4 too (IPV6_V6ONLY off): :PORT on a
    // host with IPv6. Otherwise an IPv6 socket is IPv6 only.
    bool dual_stack;

    bool ipv6() const { return address.ss_family == AF_INET6; }
    const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&address); }
};

// Resolves `address` and checks that it can be bound now (a socket bound
// and closed at once). Throws std::runtime_error "metrics_address ADDRESS:
// address in use" / "...: bad address (...)" / "...: permission denied".
MetricsListenAddress resolve_metrics_address(const std::string& address);

// The host part of the endpoint's URL for the log: HOST as written
// ("[::1]" with its brackets), "localhost" for :PORT.
std::string metrics_url_host(const std::string& address);

}  // namespace vnet::control
