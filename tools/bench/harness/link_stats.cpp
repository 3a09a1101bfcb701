#include "harness/link_stats.hpp"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "harness/netns.hpp"

namespace vnet::bench {

LinkStatsReader::LinkStatsReader(const std::string& netns) {
    std::optional<NetnsThreadScope> scope;
    if (!netns.empty()) {
        scope.emplace(netns);
    }
    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd_ < 0) {
        throw std::runtime_error(std::string("netlink socket: ") + std::strerror(errno));
    }
    timeval tv{2, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

LinkStatsReader::~LinkStatsReader() {
    if (fd_ >= 0) {
        close(fd_);
    }
}

std::optional<LinkStats> LinkStatsReader::read(const std::string& ifname) {
    struct Request {
        nlmsghdr nh;
        ifinfomsg ifi;
        char attrs[64];
    } req{};
    if (ifname.size() >= IFNAMSIZ) {
        return std::nullopt;
    }
    req.nh.nlmsg_type = RTM_GETLINK;
    req.nh.nlmsg_flags = NLM_F_REQUEST;
    req.nh.nlmsg_seq = ++seq_;
    req.ifi.ifi_family = AF_UNSPEC;
    auto* rta = reinterpret_cast<rtattr*>(req.attrs);
    rta->rta_type = IFLA_IFNAME;
    rta->rta_len = static_cast<unsigned short>(RTA_LENGTH(ifname.size() + 1));
    std::memcpy(RTA_DATA(rta), ifname.c_str(), ifname.size() + 1);
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(ifinfomsg)) + RTA_ALIGN(rta->rta_len);
    if (send(fd_, &req, req.nh.nlmsg_len, 0) < 0) {
        return std::nullopt;
    }
    std::vector<char> buf(32768);
    for (;;) {
        const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
        if (n <= 0) {
            return std::nullopt;
        }
        int len = static_cast<int>(n);
        for (auto* nh = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(nh, len);
             nh = NLMSG_NEXT(nh, len)) {
            if (nh->nlmsg_seq != seq_) {
                continue;  // a late answer to an earlier, timed-out request
            }
            if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type != RTM_NEWLINK) {
                return std::nullopt;
            }
            auto* ifi = static_cast<ifinfomsg*>(NLMSG_DATA(nh));
            int attr_len = static_cast<int>(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
            for (auto* a = IFLA_RTA(ifi); RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
                if (a->rta_type == IFLA_STATS64 && RTA_PAYLOAD(a) >= sizeof(rtnl_link_stats64)) {
                    rtnl_link_stats64 s;
                    std::memcpy(&s, RTA_DATA(a), sizeof(s));
                    LinkStats out;
                    out.rx_packets = s.rx_packets;
                    out.rx_dropped = s.rx_dropped;
                    out.tx_packets = s.tx_packets;
                    out.tx_dropped = s.tx_dropped;
                    out.rx_bytes = s.rx_bytes;
                    out.tx_bytes = s.tx_bytes;
                    return out;
                }
            }
            return std::nullopt;
        }
    }
}

}  // namespace vnet::bench
