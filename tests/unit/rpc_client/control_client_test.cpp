// ControlClient against a socket that accepts and never answers (a wedged
// vnetd): the call ends after the answer timeout with ControlTimeout, which
// vnetctl prints and vnetd-cni turns into its "does not answer" code.
#include "rpc_client/control_client.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "common/unique_fd.hpp"

namespace vnet::rpc_client {
namespace {

// A listening unix socket in a fresh directory; connections wait in its
// backlog, never accepted, never answered.
struct SilentSocket {
    std::string dir;
    std::string path;
    UniqueFd fd;

    SilentSocket() {
        char tmpl[] = "/tmp/vnet-ctl-test.XXXXXX";
        dir = ::mkdtemp(tmpl);
        path = dir + "/silent.ctl";
        fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        path.copy(addr.sun_path, sizeof addr.sun_path - 1);
        EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
        EXPECT_EQ(::listen(fd.get(), 4), 0);
    }
    ~SilentSocket() {
        ::unlink(path.c_str());
        ::rmdir(dir.c_str());
    }
};

TEST(ControlClient, a_silent_vnetd_ends_the_call_after_the_answer_timeout) {
    SilentSocket silent;
    ControlClient client(silent.path, std::chrono::seconds(1));
    const auto start = std::chrono::steady_clock::now();
    try {
        client.call("version");
        FAIL() << "a socket that never answers gave a result";
    } catch (const ControlTimeout& e) {
        EXPECT_EQ(std::string(e.what()),
                  "no answer from " + silent.path + " within 1 s (vnetd busy or wedged)");
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, std::chrono::milliseconds(900));
    EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST(ControlClient, a_missing_socket_is_a_connect_error_not_a_timeout) {
    try {
        ControlClient client("/tmp/vnet-ctl-test-none/none.ctl", std::chrono::seconds(1));
        FAIL() << "connected to a socket that does not exist";
    } catch (const ControlTimeout&) {
        FAIL() << "a missing socket reported as a timeout";
    } catch (const ControlError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "cannot connect to /tmp/vnet-ctl-test-none/none.ctl: No such file or directory "
                  "(is vnetd running with this --control-socket?)");
    }
}

}  // namespace
}  // namespace vnet::rpc_client
