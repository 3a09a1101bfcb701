#include <sys/socket.h>
#include <sys/un.h>

#include <gtest/gtest.h>
#include <system_error>

#include "io/epoll_reactor.hpp"
#include "vhost_user/server_socket.hpp"

namespace vnet::vhost_user {
namespace {

TEST(ServerSocketFd, adopts_an_inherited_listening_socket_and_accepts_on_it) {
    io::EpollReactor reactor;
    std::string path = "/tmp/vnet-fd-test-" + std::to_string(::getpid()) + ".sock";
    ::unlink(path.c_str());
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 4), 0);

    ServerOptions options;
    options.path = "fd:test";
    options.listen_fd = fd;
    ServerSocket server(reactor, options, nullptr);

    UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    reactor.run_once(std::chrono::milliseconds(1000));
    EXPECT_EQ(server.connection_count(), 1u);
    ::unlink(path.c_str());
}

TEST(ServerSocketFd, refuses_an_fd_that_is_not_a_listening_socket) {
    io::EpollReactor reactor;
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    UniqueFd other(sv[1]);
    ServerOptions options;
    options.path = "fd:test";
    options.listen_fd = sv[0];
    EXPECT_THROW(ServerSocket(reactor, options, nullptr), std::system_error);
    ::close(sv[0]);
}

}  // namespace
}  // namespace vnet::vhost_user
