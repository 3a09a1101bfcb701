// Least privilege (--user/--group): once vnetd has opened what needs root
// (taps, XDP programs, sockets and their ownership), it becomes that user
// and keeps at most CAP_NET_ADMIN, through libcap-ng. CAP_NET_ADMIN stays
// only while ports can still be added at run time (a control socket or a
// config file to reload): TUNSETIFF on a new tap needs it. It stays on the
// calling thread alone, the control thread that adds ports; every other
// thread (the workers, the metrics server) changes user with it, and the
// kernel clears its capabilities, since none asked to keep them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace vnet::control {

struct PrivilegeDrop {
    uid_t uid = 0;
    std::optional<gid_t> gid;  // none: the user's primary group
    bool keep_net_admin = false;
};

// Becomes drop.uid/gid (supplementary groups dropped, the bounding set
// cleared) keeping only CAP_NET_ADMIN when asked. Returns what the process
// now is, for the log ("user nobody (uid 65534, gid 65534), capabilities:
// cap_net_admin"). Throws std::runtime_error with the step that failed.
std::string drop_privileges(const PrivilegeDrop& drop);

// The primary group of `uid` (getpwuid); throws when it has no entry.
gid_t primary_group_of(uid_t uid);

}  // namespace vnet::control
