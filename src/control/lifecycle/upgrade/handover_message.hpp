// The messages two vnetd processes exchange during an upgrade in place
// (docs/USAGE.md "Upgrade in place"), over a SOCK_SEQPACKET socketpair: one
// JSON object per datagram, the fds it announces attached with SCM_RIGHTS.
//
//   old -> new   offer    {port name, kind, key, fds: N}   one per port
//                offer    {control socket path, fds: 1}
//                end      every offer sent
//   new -> old   ready    every port is built on what it took; no worker runs
//                failed   {reason}: the new one gives up; the old one goes on
//   old -> new   released the old one's workers and guests are gone
//
// Pure (no syscalls): the socket side is handover_link.hpp. A message is
// input from another process, checked before use: its version, its type,
// its members and that the fds it announces are the fds that came with it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

namespace vnet::control::upgrade {

// Bumped when a message changes meaning: an old and a new vnetd of
// different versions refuse each other (the upgrade fails, the old one
// keeps running), rather than guess.
inline constexpr int kHandoverVersion = 1;

enum class HandoverType { offer, end, ready, failed, released };
std::string_view to_string(HandoverType type);

struct HandoverMessage {
    HandoverType type = HandoverType::end;
    // offer: what the fds are. `kind` is a port factory's kind ("tap",
    // "vhost_user") or "control" (the control socket); `name` the port's
    // name (empty for the control socket); `key` what must still match
    // for the new config to take them (the socket path, the tap's ifname).
    std::string kind;
    std::string name;
    std::string key;
    size_t fds = 0;
    // failed: why, for vnetctl upgrade's error.
    std::string reason;
};

// The messages, by what they carry.
HandoverMessage handover_offer(std::string kind, std::string name, std::string key, size_t fds);
HandoverMessage handover_of_type(HandoverType type);  // end, ready, released
HandoverMessage handover_failed(std::string reason);

// The datagram for `message`.
std::string encode_handover(const HandoverMessage& message);

// The message in `datagram`, which came with `fds_received` fds; or why it
// is not one (the caller closes those fds).
std::variant<HandoverMessage, std::string> decode_handover(std::string_view datagram,
                                                           size_t fds_received);

}  // namespace vnet::control::upgrade
