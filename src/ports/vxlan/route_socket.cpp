#include "ports/vxlan/route_socket.hpp"

#include <netlink/netlink.h>

#include <cerrno>

#include "ports/setup_error.hpp"

namespace vnet::ports {

netlink::Sock route_socket(const std::string& device) {
    netlink::Sock sk(nl_socket_alloc());
    if (!sk) {
        throw PortSetupError(device + ": nl_socket_alloc failed", ENOMEM);
    }
    if (int err = nl_connect(sk.get(), NETLINK_ROUTE); err < 0) {
        netlink_failed(device, "connecting to rtnetlink", err);
    }
    return sk;
}

void netlink_failed(const std::string& device, const std::string& step, int nl_err) {
    throw PortSetupError(device + ": " + step + " failed: " + nl_geterror(nl_err), 0);
}

}  // namespace vnet::ports
