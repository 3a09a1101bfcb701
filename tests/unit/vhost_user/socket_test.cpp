// Server and client sockets on a real reactor and real unix socket paths.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <fstream>

#include "io/epoll_reactor.hpp"
#include "io/unix_address.hpp"
#include "unit/vhost_user/device_harness.hpp"
#include "vhost_user/client_socket.hpp"
#include "vhost_user/server_socket.hpp"

namespace vnet::vhost_user {
namespace {

using namespace std::chrono_literals;

std::string temp_socket_path() {
    static std::atomic<int> n{0};
    return "/tmp/vnet-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".sock";
}

UniqueFd connect_to(const std::string& path) {
    sockaddr_un addr;
    io::make_unix_address(path, &addr);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        fd.reset();
    }
    return fd;
}

UniqueFd listen_on(const std::string& path) {
    sockaddr_un addr;
    io::make_unix_address(path, &addr);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd.get(), 4) != 0) {
        fd.reset();
    }
    return fd;
}

ServerOptions server_options(const std::string& path, uint32_t max_connections = 1) {
    ServerOptions o;
    o.path = path;
    o.max_connections = max_connections;
    return o;
}

ClientOptions client_options(const std::string& path) {
    ClientOptions o;
    o.path = path;
    o.min_backoff = 5ms;
    o.max_backoff = 20ms;
    return o;
}

bool path_exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

template <class Done>
bool run_until(io::EpollReactor& reactor, Done done, std::chrono::milliseconds limit = 3000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        reactor.run_once(5ms);
    }
    return done();
}

bool get_features(io::EpollReactor& reactor, int fd) {
    if (!send_message(fd, Request::get_features, MessageHeader::kVersion, nullptr, 0, {})) {
        return false;
    }
    for (int i = 0; i < 10; ++i) {
        reactor.run_once(10ms);
    }
    Message reply;
    return receive_message(fd, reply, 500ms) == ReceiveResult::message;
}

TEST(VhostUserServer, accepts_a_front_end_and_answers_it) {
    io::EpollReactor reactor;
    const std::string path = temp_socket_path();
    ServerSocket server(reactor, server_options(path), nullptr);
    UniqueFd front = connect_to(path);
    ASSERT_TRUE(front.valid());
    EXPECT_TRUE(get_features(reactor, front.get()));
    EXPECT_EQ(server.connection_count(), 1u);
    ASSERT_EQ(server.devices().size(), 1u);
    EXPECT_EQ(server.devices()[0]->name(), path) << "logs carry the socket path";
}

TEST(VhostUserServer, rejects_a_second_front_end_while_one_is_connected) {
    io::EpollReactor reactor;
    const std::string path = temp_socket_path();
    ServerSocket server(reactor, server_options(path, 1), nullptr);
    UniqueFd first = connect_to(path);
    ASSERT_TRUE(run_until(reactor, [&] { return server.connection_count() == 1; }));
    UniqueFd second = connect_to(path);
    ASSERT_TRUE(run_until(reactor, [&] { return server.rejected_connections() == 1; }));
    char byte;
    EXPECT_EQ(::recv(second.get(), &byte, 1, 0), 0) << "the rejected peer sees EOF";
    EXPECT_TRUE(get_features(reactor, first.get()));
}

TEST(VhostUserServer, keeps_listening_after_a_disconnect) {
    io::EpollReactor reactor;
    test::RecordingObserver observer;
    const std::string path = temp_socket_path();
    ServerSocket server(reactor, server_options(path), &observer);
    {
        UniqueFd first = connect_to(path);
        ASSERT_TRUE(get_features(reactor, first.get()));
    }
    ASSERT_TRUE(run_until(reactor, [&] { return server.connection_count() == 0; }));
    UniqueFd again = connect_to(path);
    ASSERT_TRUE(again.valid());
    EXPECT_TRUE(get_features(reactor, again.get()));
    EXPECT_EQ(server.connection_count(), 1u);
}

TEST(VhostUserServer, replaces_a_stale_socket_file_and_removes_it_on_destruction) {
    io::EpollReactor reactor;
    const std::string path = temp_socket_path();
    { UniqueFd stale = listen_on(path); }  // closed: nobody listens any more
    ASSERT_TRUE(path_exists(path));
    {
        ServerSocket server(reactor, server_options(path), nullptr);
        UniqueFd front = connect_to(path);
        EXPECT_TRUE(front.valid());
    }
    EXPECT_FALSE(path_exists(path));
}

TEST(VhostUserServer, refuses_to_replace_a_regular_file) {
    io::EpollReactor reactor;
    const std::string path = temp_socket_path();
    std::ofstream(path) << "not a socket";
    EXPECT_THROW(ServerSocket(reactor, server_options(path), nullptr), std::system_error);
    EXPECT_TRUE(path_exists(path));
    ::unlink(path.c_str());
}

TEST(VhostUserServer, refuses_a_path_a_live_server_listens_on) {
    io::EpollReactor reactor;
    const std::string path = temp_socket_path();
    ServerSocket first(reactor, server_options(path), nullptr);
    EXPECT_THROW(ServerSocket(reactor, server_options(path), nullptr), std::system_error);
    EXPECT_TRUE(connect_to(path).valid()) << "the first server still owns the path";
}

TEST(VhostUserServer, refuses_a_path_longer_than_sun_path) {
    io::EpollReactor reactor;
    EXPECT_THROW(ServerSocket(reactor, server_options("/tmp/" + std::string(200, 'x')), nullptr),
                 std::system_error);
}

TEST(VhostUserClient, retries_with_exponential_backoff_until_the_front_end_listens) {
    io::EpollReactor reactor;
    const std::string path = temp_socket_path();
    ClientSocket client(reactor, client_options(path), nullptr);
    EXPECT_FALSE(client.connected());
    ASSERT_TRUE(run_until(reactor, [&] { return client.attempts() >= 4; }));
    EXPECT_EQ(client.current_backoff(), 20ms) << "5, 10, 20, then capped";
    UniqueFd listener = listen_on(path);
    ASSERT_TRUE(run_until(reactor, [&] { return client.connected(); }));
    UniqueFd front(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(front.valid());
    EXPECT_TRUE(get_features(reactor, front.get()));
    ::unlink(path.c_str());
}

TEST(VhostUserClient, reconnects_after_the_front_end_closes) {
    io::EpollReactor reactor;
    test::RecordingObserver observer;
    const std::string path = temp_socket_path();
    UniqueFd listener = listen_on(path);
    ClientSocket client(reactor, client_options(path), &observer);
    ASSERT_TRUE(client.connected());
    {
        UniqueFd front(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        ASSERT_TRUE(get_features(reactor, front.get()));
    }
    ASSERT_TRUE(run_until(reactor, [&] { return !client.connected(); }));
    ASSERT_TRUE(run_until(reactor, [&] { return client.connected(); }));
    UniqueFd again(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    EXPECT_TRUE(get_features(reactor, again.get()));
    ::unlink(path.c_str());
}

TEST(VhostUserClient, uses_the_default_backoff_of_100ms_to_5s) {
    ClientOptions o;
    EXPECT_EQ(o.min_backoff, 100ms);
    EXPECT_EQ(o.max_backoff, 5000ms);
}

}  // namespace
}  // namespace vnet::vhost_user
