#include "ports/tap/netdev_ioctl.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"
#include "ports/setup_error.hpp"

namespace vnet::ports::netdev {
namespace {

ifreq request_for(std::string_view label, const std::string& name) {
    ifreq ifr{};
    if (name.empty() || name.size() >= IFNAMSIZ) {
        throw_option_error(label, "interface name '" + name + "' must be 1.." +
                                      std::to_string(IFNAMSIZ - 1) + " characters");
    }
    std::memcpy(ifr.ifr_name, name.data(), name.size());
    return ifr;
}

// Runs one SIOC* ioctl on a throwaway socket; throws with `step` on failure.
void netdev_ioctl(std::string_view label, unsigned long request, ifreq& ifr,
                  std::string_view step) {
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock) {
        throw_setup_error(label, "socket(AF_INET, SOCK_DGRAM) for link ioctls", errno);
    }
    if (::ioctl(sock.get(), request, &ifr) < 0) {
        throw_setup_error(label, step, errno);
    }
}

}  // namespace

unsigned ifindex(std::string_view label, const std::string& name) {
    ifreq ifr = request_for(label, name);
    netdev_ioctl(label, SIOCGIFINDEX, ifr, "SIOCGIFINDEX");
    return static_cast<unsigned>(ifr.ifr_ifindex);
}

unsigned mtu(std::string_view label, const std::string& name) {
    ifreq ifr = request_for(label, name);
    netdev_ioctl(label, SIOCGIFMTU, ifr, "SIOCGIFMTU");
    return static_cast<unsigned>(ifr.ifr_mtu);
}

void set_mtu(std::string_view label, const std::string& name, unsigned value) {
    ifreq ifr = request_for(label, name);
    ifr.ifr_mtu = static_cast<int>(value);
    // tun accepts 68..65535 (ETH_MIN_MTU..MAX_MTU); outside that it is EINVAL.
    netdev_ioctl(label, SIOCSIFMTU, ifr, "SIOCSIFMTU " + std::to_string(value));
}

unsigned txqueuelen(std::string_view label, const std::string& name) {
    ifreq ifr = request_for(label, name);
    netdev_ioctl(label, SIOCGIFTXQLEN, ifr, "SIOCGIFTXQLEN");
    return static_cast<unsigned>(ifr.ifr_qlen);
}

void set_txqueuelen(std::string_view label, const std::string& name, unsigned len) {
    ifreq ifr = request_for(label, name);
    ifr.ifr_qlen = static_cast<int>(len);
    netdev_ioctl(label, SIOCSIFTXQLEN, ifr, "SIOCSIFTXQLEN " + std::to_string(len));
}

bool link_up(std::string_view label, const std::string& name) {
    ifreq ifr = request_for(label, name);
    netdev_ioctl(label, SIOCGIFFLAGS, ifr, "SIOCGIFFLAGS");
    return (ifr.ifr_flags & IFF_UP) != 0;
}

void set_link_up(std::string_view label, const std::string& name, bool up) {
    ifreq ifr = request_for(label, name);
    netdev_ioctl(label, SIOCGIFFLAGS, ifr, "SIOCGIFFLAGS");
    if (up) {
        ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    } else {
        ifr.ifr_flags = static_cast<short>(ifr.ifr_flags & ~IFF_UP);
    }
    netdev_ioctl(label, SIOCSIFFLAGS, ifr, up ? "SIOCSIFFLAGS up" : "SIOCSIFFLAGS down");
}

}  // namespace vnet::ports::netdev
