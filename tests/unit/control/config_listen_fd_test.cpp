// --fd (vhost-user.rst "Backend program conventions": the back end is
// started with its listening socket as FDNUM): it replaces --socket-path
// and is refused, with the exact message, beside --socket-path or --client.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "control/config/config.hpp"

namespace vnet::control {
namespace {

Config vm_and_null(int listen_fd, const std::string& socket_path, bool client = false) {
    PortConfig vm;
    vm.name = "vm0";
    vm.settings = VhostUserSettings{};
    vm.get<VhostUserSettings>()->listen_fd = listen_fd;
    vm.get<VhostUserSettings>()->socket_path = socket_path;
    vm.get<VhostUserSettings>()->client = client;
    PortConfig null;
    null.name = "null0";
    null.settings = NullSettings{};
    Config c;
    c.ports = {vm, null};
    c.connections.emplace_back("vm0", "null0");
    return c;
}

std::string validation_error(const Config& c) {
    try {
        c.validate();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(ConfigListenFd, an_inherited_socket_needs_no_path) {
    EXPECT_EQ(validation_error(vm_and_null(3, "")), "");
}

TEST(ConfigListenFd, refuses_fd_with_socket_path) {
    EXPECT_EQ(validation_error(vm_and_null(3, "/run/vnetd/vm0.sock")),
              "--fd and --socket-path cannot be given together: --fd serves a listening socket "
              "vnetd inherited, --socket-path makes one");
}

TEST(ConfigListenFd, refuses_fd_with_client) {
    EXPECT_EQ(validation_error(vm_and_null(3, "", true)),
              "--fd and --client cannot be given together: --fd is a listening socket");
}

}  // namespace
}  // namespace vnet::control
