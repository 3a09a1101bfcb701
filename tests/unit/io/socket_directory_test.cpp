// The directories of a server socket: made when missing (a fresh host has
// no /run/vnetd), with the socket's group and a mode that lets that group
// search them; an existing directory is left alone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "io/socket_directory.hpp"
#include "io/unix_listener.hpp"

namespace vnet::io {
namespace {

class SocketDirectoryTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/vnet-sockdir-XXXXXX";
        root_ = ::mkdtemp(tmpl);
    }
    void TearDown() override { std::filesystem::remove_all(root_); }

    static struct stat stat_of(const std::string& path) {
        struct stat st {};
        EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
        return st;
    }

    std::string root_;
};

TEST_F(SocketDirectoryTest, ListenerMakesEveryMissingDirectory) {
    const std::string path = root_ + "/run/vnetd/vm0.sock";
    UnixListener listener(path, {});
    ASSERT_TRUE(listener);
    EXPECT_TRUE(S_ISSOCK(stat_of(path).st_mode));
    EXPECT_EQ(stat_of(root_ + "/run").st_mode & 07777, 0755u);
    EXPECT_EQ(stat_of(root_ + "/run/vnetd").st_mode & 07777, 0755u);
}

TEST_F(SocketDirectoryTest, GroupSocketGetsAGroupDirectory) {
    const gid_t group = ::getegid() == 0 ? 1 : ::getegid();  // "daemon" on Debian
    const SocketAccess access{.mode = 0660, .owner = {}, .group = group};
    UnixListener listener(root_ + "/vnetd/vm/a.sock", access);
    const struct stat vm = stat_of(root_ + "/vnetd/vm");
    EXPECT_EQ(vm.st_mode & 07777, 0750u);
    EXPECT_EQ(vm.st_gid, group);
    EXPECT_EQ(stat_of(root_ + "/vnetd").st_mode & 07777, 0755u);  // above it: anyone searches
}

TEST_F(SocketDirectoryTest, DirectoryModeFollowsWhoTheSocketIsFor) {
    EXPECT_EQ(socket_directory_mode({}), 0755u);
    EXPECT_EQ(socket_directory_mode({.mode = 0660, .owner = {}, .group = 64}), 0750u);
    EXPECT_EQ(socket_directory_mode({.mode = 0666, .owner = {}, .group = 64}), 0755u);
    EXPECT_EQ(socket_directory_mode({.mode = 0660, .owner = {}, .group = {}}), 0755u);
    EXPECT_EQ(socket_directory_mode({.mode = 0600, .owner = 1000, .group = 64}), 0755u);
}

TEST_F(SocketDirectoryTest, ExistingDirectoryIsLeftAsItIs) {
    const std::string dir = root_ + "/mine";
    ASSERT_EQ(::mkdir(dir.c_str(), 0711), 0);
    ASSERT_EQ(::chmod(dir.c_str(), 0711), 0);
    make_socket_directory(dir + "/x.sock", {.mode = 0660, .owner = {}, .group = 1});
    const struct stat st = stat_of(dir);
    EXPECT_EQ(st.st_mode & 07777, 0711u);
    EXPECT_EQ(st.st_gid, ::getegid());
}

TEST_F(SocketDirectoryTest, UnmakeableDirectoryIsNamed) {
    const std::string file = root_ + "/file";
    ASSERT_EQ(::close(::creat(file.c_str(), 0644)), 0);
    try {
        make_socket_directory(file + "/sub/x.sock", {});
        FAIL() << "a directory under a file was made";
    } catch (const std::system_error& e) {
        EXPECT_EQ(std::string(e.what()).find("mkdir " + file + "/sub"), 0u) << e.what();
    }
}

}  // namespace
}  // namespace vnet::io
