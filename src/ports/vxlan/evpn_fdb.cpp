#include "ports/vxlan/evpn_fdb.hpp"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "ports/setup_error.hpp"
#include "ports/vxlan/route_socket.hpp"

namespace vnet::ports {
namespace {

struct MsgFree {
    void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using Msg = std::unique_ptr<nl_msg, MsgFree>;
struct CbPut {
    void operator()(nl_cb* c) const { nl_cb_put(c); }
};

std::string text_of(const packet::MacAddress& m) {
    char text[18];
    std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                  m[5]);
    return text;
}

bool is_unicast(const packet::MacAddress& mac) {
    return (mac[0] & 0x01) == 0 && mac != packet::MacAddress{};
}

// One message of the dump into an FdbEntry; false for what is not a
// bridge-family neighbour with a MAC.
bool parse_entry(nlmsghdr* h, FdbEntry& out) {
    if (h->nlmsg_type != RTM_NEWNEIGH || !nlmsg_valid_hdr(h, sizeof(ndmsg))) {
        return false;
    }
    const auto* ndm = static_cast<const ndmsg*>(nlmsg_data(h));
    if (ndm->ndm_family != AF_BRIDGE) {
        return false;
    }
    nlattr* tb[NDA_MAX + 1] = {};
    if (nlmsg_parse(h, sizeof(ndmsg), tb, NDA_MAX, nullptr) < 0 || tb[NDA_LLADDR] == nullptr ||
        nla_len(tb[NDA_LLADDR]) != static_cast<int>(out.mac.size())) {
        return false;
    }
    std::memcpy(out.mac.data(), nla_data(tb[NDA_LLADDR]), out.mac.size());
    out.ifindex = static_cast<unsigned>(ndm->ndm_ifindex);
    out.state = ndm->ndm_state;
    out.flags = ndm->ndm_flags;
    out.master =
        tb[NDA_MASTER] != nullptr && nla_len(tb[NDA_MASTER]) == 4 ? nla_get_u32(tb[NDA_MASTER]) : 0;
    out.dst.clear();
    if (tb[NDA_DST] != nullptr) {
        const int len = nla_len(tb[NDA_DST]);
        char text[INET6_ADDRSTRLEN] = {};
        if ((len == 4 && ::inet_ntop(AF_INET, nla_data(tb[NDA_DST]), text, sizeof text)) ||
            (len == 16 && ::inet_ntop(AF_INET6, nla_data(tb[NDA_DST]), text, sizeof text))) {
            out.dst = text;
        }
    }
    return true;
}

struct DumpState {
    unsigned tap;
    unsigned vxlan;
    EvpnFdbView* view;
};

int on_entry(nl_msg* msg, void* arg) {
    auto* state = static_cast<DumpState*>(arg);
    FdbEntry entry;
    if (parse_entry(nlmsg_hdr(msg), entry)) {
        classify_fdb_entry(entry, state->tap, state->vxlan, *state->view);
    }
    return NL_OK;
}

}  // namespace

void classify_fdb_entry(const FdbEntry& e, unsigned tap_ifindex, unsigned vxlan_ifindex,
                        EvpnFdbView& view) {
    if (e.mac == packet::MacAddress{}) {
        // Zebra's flood entries are the vxlan device's own (`self`), whatever
        // their NUD state; the bridge's entry or one without a VTEP floods
        // nowhere.
        if (e.ifindex == vxlan_ifindex && e.master == 0 && !e.dst.empty()) {
            view.flood.insert(e.dst);
        }
        return;
    }
    if (!is_unicast(e.mac) || (e.state & NUD_PERMANENT) != 0) {
        return;  // group addresses, the ports' own addresses
    }
    if (e.ifindex == tap_ifindex) {
        if (e.master != 0 && (e.state & NUD_NOARP) != 0) {
            view.statics.insert(e.mac);
        }
        return;
    }
    if (e.ifindex == vxlan_ifindex) {
        std::string& vtep = view.remotes[e.mac];  // the bridge's entry names no VTEP
        if (!e.dst.empty()) {
            vtep = e.dst;
        }
    }
}

EvpnFdb::EvpnFdb(std::string device, unsigned bridge_ifindex, unsigned tap_ifindex,
                 unsigned vxlan_ifindex)
    : device_(std::move(device)),
      bridge_(bridge_ifindex),
      tap_(tap_ifindex),
      vxlan_(vxlan_ifindex),
      sk_(route_socket(device_)) {}

EvpnFdbView EvpnFdb::read() {
    EvpnFdbView view;
    // The request `bridge fdb show br B` sends: an ifinfomsg with
    // IFLA_MASTER, which the kernel reads as "the ports of B".
    Msg msg(nlmsg_alloc_simple(RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP));
    ifinfomsg ifi{};
    ifi.ifi_family = AF_BRIDGE;
    if (!msg || nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO) < 0 ||
        nla_put_u32(msg.get(), IFLA_MASTER, bridge_) < 0) {
        throw PortSetupError(device_ + ": building the FDB dump request failed", ENOMEM);
    }
    std::unique_ptr<nl_cb, CbPut> cb(nl_cb_alloc(NL_CB_DEFAULT));
    if (!cb) {
        throw PortSetupError(device_ + ": nl_cb_alloc failed", ENOMEM);
    }
    DumpState state{tap_, vxlan_, &view};
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_entry, &state);
    if (int err = nl_send_auto(sk_.get(), msg.get()); err < 0) {
        netlink_failed(device_, "asking for the bridge's FDB", err);
    }
    if (int err = nl_recvmsgs(sk_.get(), cb.get()); err < 0) {
        netlink_failed(device_, "reading the bridge's FDB", err);
    }
    return view;
}

int EvpnFdb::change_static(int type, int flags, const packet::MacAddress& mac) {
    Msg msg(nlmsg_alloc_simple(type, NLM_F_REQUEST | NLM_F_ACK | flags));
    ndmsg ndm{};
    ndm.ndm_family = AF_BRIDGE;
    ndm.ndm_ifindex = static_cast<int>(tap_);
    ndm.ndm_state = NUD_NOARP;
    ndm.ndm_flags = NTF_MASTER;
    if (!msg || nlmsg_append(msg.get(), &ndm, sizeof ndm, NLMSG_ALIGNTO) < 0 ||
        nla_put(msg.get(), NDA_LLADDR, static_cast<int>(mac.size()), mac.data()) < 0) {
        return -NLE_NOMEM;
    }
    if (int err = nl_send_auto(sk_.get(), msg.get()); err < 0) {
        return err;
    }
    return nl_wait_for_ack(sk_.get());
}

void EvpnFdb::add_static(const packet::MacAddress& mac) {
    if (int err = change_static(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, mac); err < 0) {
        netlink_failed(device_, "adding the static entry of " + text_of(mac), err);
    }
}

void EvpnFdb::remove_static(const packet::MacAddress& mac) {
    if (int err = change_static(RTM_DELNEIGH, 0, mac); err < 0 && err != -NLE_OBJ_NOTFOUND) {
        netlink_failed(device_, "removing the static entry of " + text_of(mac), err);
    }
}

}  // namespace vnet::ports
