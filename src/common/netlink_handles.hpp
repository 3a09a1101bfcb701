// Owning handles for libnl-route objects (a socket, a link, an address, a
// neighbour): each frees or puts its object when it goes, so a throw in
// the middle of an rtnetlink sequence leaks nothing. Header-only; the
// parts that talk rtnetlink (ports/vxlan, cni) link libnl-route.
#pragma once

#include <netlink/addr.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/neighbour.h>
#include <netlink/socket.h>

#include <memory>

namespace vnet::netlink {

struct SockFree {
    void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct LinkPut {
    void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct AddrPut {
    void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct NeighPut {
    void operator()(rtnl_neigh* n) const { rtnl_neigh_put(n); }
};

using Sock = std::unique_ptr<nl_sock, SockFree>;
using Link = std::unique_ptr<rtnl_link, LinkPut>;
using Addr = std::unique_ptr<nl_addr, AddrPut>;
using Neigh = std::unique_ptr<rtnl_neigh, NeighPut>;

}  // namespace vnet::netlink
