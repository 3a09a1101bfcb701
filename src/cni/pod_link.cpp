#include "cni/pod_link.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "cni/cni_error.hpp"
#include "common/netlink_handles.hpp"
#include "common/unique_fd.hpp"

namespace vnet::cni {

using nlohmann::json;

namespace {

[[noreturn]] void netlink_error(const std::string& step, int nl_err) {
    throw CniError(ErrorCode::io_failure, step + ": " + nl_geterror(nl_err));
}

[[noreturn]] void os_error(const std::string& step, int err) {
    throw CniError(ErrorCode::io_failure, step + ": " + std::strerror(err));
}

using netlink::Addr;
using netlink::Link;
using netlink::Sock;

Sock connect_route_socket() {
    Sock sk(nl_socket_alloc());
    if (!sk) {
        throw CniError(ErrorCode::io_failure, "nl_socket_alloc failed");
    }
    if (int err = nl_connect(sk.get(), NETLINK_ROUTE); err < 0) {
        netlink_error("connecting to rtnetlink", err);
    }
    return sk;
}

UniqueFd open_netns(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        os_error("opening netns " + path, errno);
    }
    return fd;
}

// A netlink socket bound to the pod's netns: made while the thread is in
// it (a socket stays in the namespace it was created in), then back home.
Sock route_socket_in(const std::string& netns_path) {
    UniqueFd home(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!home) {
        os_error("opening this thread's netns", errno);
    }
    UniqueFd target = open_netns(netns_path);
    if (::setns(target.get(), CLONE_NEWNET) != 0) {
        os_error("entering netns " + netns_path, errno);
    }
    Sock sk;
    try {
        sk = connect_route_socket();
    } catch (...) {
        (void)::setns(home.get(), CLONE_NEWNET);
        throw;
    }
    if (::setns(home.get(), CLONE_NEWNET) != 0) {
        os_error("returning to the host netns", errno);  // nothing after this is safe
    }
    return sk;
}

Link get_link(nl_sock* sk, const std::string& name, const std::string& where) {
    rtnl_link* link = nullptr;
    if (int err = rtnl_link_get_kernel(sk, 0, name.c_str(), &link); err < 0) {
        netlink_error("finding link " + name + " " + where, err);
    }
    return Link(link);
}

Addr parse_addr(const std::string& text, int family) {
    nl_addr* a = nullptr;
    if (int err = nl_addr_parse(text.c_str(), family, &a); err < 0) {
        netlink_error("parsing address " + text, err);
    }
    return Addr(a);
}

int family_of(const std::string& address) {
    return address.find(':') == std::string::npos ? AF_INET : AF_INET6;
}

std::string without_prefix(const std::string& cidr) {
    return cidr.substr(0, cidr.find('/'));
}

// The gateway of the first ips[] entry of this family on our interface.
std::string gateway_for(const json& result, size_t iface_index, int family) {
    for (const json& ip : result.value("ips", json::array())) {
        if (ip.value("interface", iface_index) == iface_index &&
            family_of(ip.value("address", std::string())) == family && ip.contains("gateway")) {
            return ip["gateway"].get<std::string>();
        }
    }
    return "";
}

}  // namespace

bool netns_exists(const std::string& netns_path) {
    UniqueFd fd(::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
    return static_cast<bool>(fd);
}

std::string move_link_into_pod(const std::string& host_name, const std::string& netns_path,
                               const std::string& ifname, unsigned mtu) {
    Sock host = connect_route_socket();
    Link link = get_link(host.get(), host_name, "on the host");
    UniqueFd target = open_netns(netns_path);
    Link move(rtnl_link_alloc());
    rtnl_link_set_ns_fd(move.get(), target.get());
    if (int err = rtnl_link_change(host.get(), link.get(), move.get(), 0); err < 0) {
        netlink_error("moving " + host_name + " into netns " + netns_path, err);
    }
    // Renamed in the pod (the move leaves it down, as a rename needs), then up.
    Sock pod = route_socket_in(netns_path);
    Link moved = get_link(pod.get(), host_name, "in netns " + netns_path);
    Link rename(rtnl_link_alloc());
    rtnl_link_set_name(rename.get(), ifname.c_str());
    if (mtu != 0) {
        rtnl_link_set_mtu(rename.get(), mtu);
    }
    if (int err = rtnl_link_change(pod.get(), moved.get(), rename.get(), 0); err < 0) {
        netlink_error("renaming " + host_name + " to " + ifname + " in netns " + netns_path, err);
    }
    Link renamed = get_link(pod.get(), ifname, "in netns " + netns_path);
    Link up(rtnl_link_alloc());
    rtnl_link_set_flags(up.get(), IFF_UP);
    if (int err = rtnl_link_change(pod.get(), renamed.get(), up.get(), 0); err < 0) {
        netlink_error("setting " + ifname + " up in netns " + netns_path, err);
    }
    char mac[64] = "";
    if (nl_addr* a = rtnl_link_get_addr(renamed.get())) {
        nl_addr2str(a, mac, sizeof mac);
    }
    return mac;
}

void address_pod_link(const std::string& netns_path, const std::string& ifname, const json& result,
                      size_t iface_index) {
    Sock pod = route_socket_in(netns_path);
    Link link = get_link(pod.get(), ifname, "in netns " + netns_path);
    const int ifindex = rtnl_link_get_ifindex(link.get());
    for (const json& ip : result.value("ips", json::array())) {
        if (ip.value("interface", iface_index) != iface_index) {
            continue;
        }
        const std::string cidr = ip.at("address").get<std::string>();
        Addr local = parse_addr(cidr, family_of(cidr));
        std::unique_ptr<rtnl_addr, void (*)(rtnl_addr*)> addr(rtnl_addr_alloc(), rtnl_addr_put);
        rtnl_addr_set_ifindex(addr.get(), ifindex);
        rtnl_addr_set_local(addr.get(), local.get());
        if (int err = rtnl_addr_add(pod.get(), addr.get(), 0); err < 0) {
            netlink_error("adding " + cidr + " to " + ifname, err);
        }
    }
    for (const json& r : result.value("routes", json::array())) {
        const std::string dst = r.at("dst").get<std::string>();
        const int family = family_of(dst);
        const std::string gw = r.contains("gw") ? r["gw"].get<std::string>()
                                                : gateway_for(result, iface_index, family);
        Addr dst_addr = parse_addr(dst, family);
        std::unique_ptr<rtnl_route, void (*)(rtnl_route*)> route(rtnl_route_alloc(),
                                                                 rtnl_route_put);
        rtnl_route_set_family(route.get(), static_cast<uint8_t>(family));
        rtnl_route_set_dst(route.get(), dst_addr.get());
        rtnl_nexthop* nh = rtnl_route_nh_alloc();
        rtnl_route_nh_set_ifindex(nh, ifindex);
        if (!gw.empty()) {
            Addr gw_addr = parse_addr(gw, family);
            rtnl_route_nh_set_gateway(nh, gw_addr.get());
        } else {
            rtnl_route_set_scope(route.get(), RT_SCOPE_LINK);
        }
        rtnl_route_add_nexthop(route.get(), nh);  // the route owns nh now
        if (int err = rtnl_route_add(pod.get(), route.get(), 0); err < 0) {
            netlink_error(
                "adding route " + dst + (gw.empty() ? "" : " via " + gw) + " on " + ifname, err);
        }
    }
}

void remove_pod_tap(const std::string& netns_path, const std::string& ifname) {
    if (netns_path.empty() || ifname.empty() || !netns_exists(netns_path)) {
        return;
    }
    Sock pod = route_socket_in(netns_path);
    rtnl_link* raw = nullptr;
    if (rtnl_link_get_kernel(pod.get(), 0, ifname.c_str(), &raw) < 0) {
        return;  // gone already
    }
    Link link(raw);
    const char* kind = rtnl_link_get_type(link.get());
    if (kind == nullptr || std::strcmp(kind, "tun") != 0) {
        return;  // not ours: a runtime's own link of that name stays
    }
    if (int err = rtnl_link_delete(pod.get(), link.get()); err < 0 && err != -NLE_NODEV) {
        netlink_error("deleting " + ifname + " in netns " + netns_path, err);
    }
}

std::string pod_link_problem(const std::string& netns_path, const std::string& ifname,
                             const json& result, size_t iface_index) {
    if (!netns_exists(netns_path)) {
        return "netns " + netns_path + " does not exist";
    }
    Sock pod = route_socket_in(netns_path);
    rtnl_link* raw = nullptr;
    if (rtnl_link_get_kernel(pod.get(), 0, ifname.c_str(), &raw) < 0) {
        return "no interface " + ifname + " in netns " + netns_path;
    }
    Link link(raw);
    if ((rtnl_link_get_flags(link.get()) & IFF_UP) == 0) {
        return "interface " + ifname + " in netns " + netns_path + " is down";
    }
    nl_cache* cache = nullptr;
    if (int err = rtnl_addr_alloc_cache(pod.get(), &cache); err < 0) {
        netlink_error("listing addresses in netns " + netns_path, err);
    }
    std::set<std::string> present;
    const int ifindex = rtnl_link_get_ifindex(link.get());
    for (nl_object* o = nl_cache_get_first(cache); o != nullptr; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) == ifindex) {
            char buf[128];
            present.insert(without_prefix(nl_addr2str(rtnl_addr_get_local(a), buf, sizeof buf)));
        }
    }
    nl_cache_free(cache);
    for (const json& ip : result.value("ips", json::array())) {
        if (ip.value("interface", iface_index) != iface_index) {
            continue;
        }
        const std::string address = without_prefix(ip.value("address", std::string()));
        if (present.count(address) == 0) {
            return "interface " + ifname + " lacks address " + address;
        }
    }
    return "";
}

}  // namespace vnet::cni
