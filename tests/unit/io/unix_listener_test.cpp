// UnixListener: the one way vnetd makes a server socket.
#include "io/unix_listener.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <system_error>

#include "io/unix_address.hpp"

namespace vnet::io {
namespace {

std::string temp_path() {
    static std::atomic<int> n{0};
    return "/tmp/vnet-listener-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

int error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::system_error& e) {
        return e.code().value();
    }
    return 0;
}

TEST(UnixListener, creates_the_socket_with_its_mode_and_removes_it_at_the_end) {
    const std::string path = temp_path();
    {
        UnixListener l(path, {.mode = 0600});
        struct stat st {};
        ASSERT_EQ(::stat(path.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0600u);
    }
    EXPECT_FALSE(exists(path));
}

TEST(UnixListener, replaces_a_stale_socket_but_not_a_live_one_or_a_file) {
    const std::string path = temp_path();
    {
        // A socket file nobody listens on: what a crashed vnetd leaves.
        sockaddr_un addr;
        make_unix_address(path, &addr);
        UniqueFd s(::socket(AF_UNIX, SOCK_STREAM, 0));
        ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    }
    ASSERT_TRUE(exists(path));
    UnixListener live(path, {});
    EXPECT_EQ(error_of([&] { UnixListener second(path, {}); }), EADDRINUSE);
    EXPECT_TRUE(exists(path)) << "the live one keeps its path";

    const std::string file = temp_path();
    std::ofstream(file) << "not a socket";
    EXPECT_EQ(error_of([&] { UnixListener l(file, {}); }), EEXIST);
    EXPECT_TRUE(exists(file));
    ::unlink(file.c_str());
}

TEST(UnixListener, leaves_a_path_someone_else_took_over) {
    const std::string path = temp_path();
    std::optional<UnixListener> first(std::in_place, path, SocketAccess{});
    ::unlink(path.c_str());
    UnixListener second(path, {});  // another owner now
    first.reset();
    EXPECT_TRUE(exists(path));
}

TEST(UnixListener, adopts_only_a_listening_socket) {
    UniqueFd not_listening(::socket(AF_UNIX, SOCK_STREAM, 0));
    EXPECT_EQ(error_of([&] { UnixListener::adopt(not_listening.get(), "--fd 9"); }), EINVAL);
    EXPECT_EQ(error_of([&] { UnixListener::adopt(-1, "--fd -1"); }), EBADF);
}

TEST(UnixListener, refuses_a_path_that_does_not_fit_sockaddr_un) {
    EXPECT_EQ(error_of([&] { UnixListener l("/tmp/" + std::string(200, 'p'), {}); }), ENAMETOOLONG);
}

}  // namespace
}  // namespace vnet::io
