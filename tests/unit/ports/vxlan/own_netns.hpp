// in_own_netns: runs a test's body on a thread in a network namespace of
// its own (unshared by that one thread: a namespace is per thread, and it
// goes when the thread's sockets and links do), with its loopback up. For
// tests that change what a whole namespace sees (a socket lookup program
// on a port), so that nothing else on the machine is touched. Needs root
// (CAP_SYS_ADMIN), as the unit tests run in CI.
#pragma once

#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "common/unique_fd.hpp"

namespace vnet::test {

inline void in_own_netns(const std::function<void()>& body) {
    std::string failure;
    std::thread worker([&] {
        if (::unshare(CLONE_NEWNET) != 0) {
            failure = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
            return;
        }
        UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        ifreq ifr{};
        std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
        if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0) {
            failure = "SIOCGIFFLAGS lo";
            return;
        }
        ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
        if (::ioctl(s.get(), SIOCSIFFLAGS, &ifr) != 0) {
            failure = "SIOCSIFFLAGS lo up";
            return;
        }
        body();
    });
    worker.join();
    ASSERT_EQ(failure, "");
}

}  // namespace vnet::test
