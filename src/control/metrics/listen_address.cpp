#include "control/metrics/listen_address.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/unique_fd.hpp"

namespace vnet::control {
namespace {

[[noreturn]] void refuse(const std::string& address, const std::string& why) {
    throw std::runtime_error("metrics_address " + address + ": " + why);
}

// bind() on a throw-away socket with the server's options: the answer the
// server would get.
int try_bind(const sockaddr* addr, socklen_t len, bool dual_stack) {
    UniqueFd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) {
        return errno;
    }
    const int one = 1, zero = 0;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6) {
        const int* v6only = dual_stack ? &zero : &one;
        ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, v6only, sizeof one);
    }
    return ::bind(fd.get(), addr, len) == 0 ? 0 : errno;
}

void check_bind(const std::string& address, int err) {
    switch (err) {
        case 0:
            return;
        case EADDRINUSE:
            refuse(address, "address in use");
        case EADDRNOTAVAIL:
            refuse(address, "bad address (not an address of this host)");
        case EACCES:
            refuse(address, "permission denied (a port below 1024 needs CAP_NET_BIND_SERVICE)");
        default:
            refuse(address, std::strerror(err));
    }
}

uint16_t port_number(const std::string& address, const std::string& text) {
    uint16_t port = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        refuse(address, "bad address (the port must be 0..65535)");
    }
    return port;
}

}  // namespace

MetricsListenAddress resolve_metrics_address(const std::string& address) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
        refuse(address, "bad address (HOST:PORT, [IPv6]:PORT or :PORT)");
    }
    std::string host = address.substr(0, colon);
    const std::string port = address.substr(colon + 1);
    if (host.empty()) {
        // Every address: IPv6 with IPv4 mapped in, or IPv4 alone on a host
        // without IPv6.
        sockaddr_in6 any6{};
        any6.sin6_family = AF_INET6;
        any6.sin6_addr = in6addr_any;
        any6.sin6_port = htons(port_number(address, port));
        MetricsListenAddress listen;
        const int err = try_bind(reinterpret_cast<const sockaddr*>(&any6), sizeof any6, true);
        if (err != EAFNOSUPPORT) {
            check_bind(address, err);
            std::memcpy(&listen.address, &any6, sizeof any6);
            listen.length = sizeof any6;
            listen.dual_stack = true;
            return listen;
        }
        sockaddr_in any4{};
        any4.sin_family = AF_INET;
        any4.sin_addr.s_addr = htonl(INADDR_ANY);
        any4.sin_port = any6.sin6_port;
        check_bind(address, try_bind(reinterpret_cast<const sockaddr*>(&any4), sizeof any4, false));
        std::memcpy(&listen.address, &any4, sizeof any4);
        listen.length = sizeof any4;
        return listen;
    }
    const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
    if (bracketed) {
        host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_family = bracketed ? AF_INET6 : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    // A bracketed host is an IPv6 literal, taken as it is: AI_ADDRCONFIG
    // would refuse [::1] on a host (a namespace) whose only IPv6 address is
    // its loopback's. A name resolves to the families the host has.
    hints.ai_flags = AI_NUMERICSERV | (bracketed ? AI_NUMERICHOST : AI_ADDRCONFIG);
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        refuse(address, "bad address (" + host + ": " + ::gai_strerror(rc) + ")");
    }
    // The first answer, as the server would take it (IPv6 only if IPv6).
    const addrinfo& first = *found;
    MetricsListenAddress listen;
    const bool fits = first.ai_addrlen <= sizeof listen.address;
    if (fits) {
        std::memcpy(&listen.address, first.ai_addr, first.ai_addrlen);
        listen.length = first.ai_addrlen;
    }
    ::freeaddrinfo(found);
    if (!fits) {
        refuse(address, "bad address (" + host + ": not an IPv4 or IPv6 address)");
    }
    // [::] is every address, IPv4 too, as :PORT (and as Linux's default,
    // net.ipv6.bindv6only=0, has it); any other IPv6 address is IPv6 only.
    listen.dual_stack =
        listen.ipv6() &&
        IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&listen.address)->sin6_addr);
    check_bind(address, try_bind(listen.sockaddr_ptr(), listen.length, listen.dual_stack));
    return listen;
}

std::string metrics_url_host(const std::string& address) {
    const size_t colon = address.rfind(':');
    const std::string host = colon == std::string::npos ? address : address.substr(0, colon);
    return host.empty() ? "localhost" : host;
}

}  // namespace vnet::control
