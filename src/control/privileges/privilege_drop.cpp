#include "control/privileges/privilege_drop.hpp"

#include <cap-ng.h>
#include <linux/capability.h>
#include <pwd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace vnet::control {
namespace {

// capng_change_id's documented failures (cap-ng.h, capng_change_id(3)).
const char* change_id_step(int rc) {
    switch (rc) {
        case -1:
            return "capng is not initialized";
        case -2:
            return "setting PR_SET_KEEPCAPS failed";
        case -3:
            return "changing the group (setresgid) failed";
        case -4:
            return "dropping the supplementary groups (setgroups) failed";
        case -5:
            return "changing the user (setresuid) failed";
        case -6:
            return "clearing PR_SET_KEEPCAPS failed";
        case -7:
            return "applying the capabilities (capset) failed";
        case -8:
            return "initializing the supplementary groups failed";
        default:
            return "it failed";
    }
}

}  // namespace

gid_t primary_group_of(uid_t uid) {
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    const int rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
    if (rc != 0 || found == nullptr) {
        throw std::runtime_error("uid " + std::to_string(uid) +
                                 " has no passwd entry: give --group");
    }
    return found->pw_gid;
}

std::string drop_privileges(const PrivilegeDrop& drop) {
    const gid_t gid = drop.gid ? *drop.gid : primary_group_of(drop.uid);
    capng_clear(CAPNG_SELECT_BOTH);
    if (drop.keep_net_admin &&
        capng_update(CAPNG_ADD, static_cast<capng_type_t>(CAPNG_EFFECTIVE | CAPNG_PERMITTED),
                     CAP_NET_ADMIN) != 0) {
        throw std::runtime_error("dropping privileges: capng_update(CAP_NET_ADMIN) failed");
    }
    errno = 0;
    const int rc =
        capng_change_id(static_cast<int>(drop.uid), static_cast<int>(gid),
                        static_cast<capng_flags_t>(CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING));
    if (rc != 0) {
        const int err = errno;
        throw std::runtime_error(std::string("dropping privileges to uid ") +
                                 std::to_string(drop.uid) + ", gid " + std::to_string(gid) + ": " +
                                 change_id_step(rc) +
                                 (err != 0 ? std::string(" (") + std::strerror(err) + ")" : ""));
    }
    std::string who = "uid " + std::to_string(drop.uid) + ", gid " + std::to_string(gid);
    return who + (drop.keep_net_admin
                      ? ", capabilities: cap_net_admin (for ports added at run time)"
                      : ", no capabilities");
}

}  // namespace vnet::control
