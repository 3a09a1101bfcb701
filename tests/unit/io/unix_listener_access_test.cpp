// UnixListener's SocketAccess: a socket appears at its path with its mode,
// owner and group already in place, and already listening. The directory is
// watched with inotify while the socket is made: the events naming the path
// are the proof that it was never seen with other permissions (a chown or
// chmod after it appeared would be an IN_ATTRIB on it).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include "io/unix_address.hpp"
#include "io/unix_listener.hpp"

namespace vnet::io {
namespace {

struct Event {
    uint32_t mask;
    std::string name;
};

class WatchedDirectory {
public:
    WatchedDirectory() {
        char tmpl[] = "/tmp/vnet-listener-access-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
        ::inotify_add_watch(inotify_.get(), dir_.c_str(),
                            IN_CREATE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE);
    }
    ~WatchedDirectory() {
        for (const std::string& name : entries()) {
            ::unlink((dir_ + "/" + name).c_str());
        }
        ::rmdir(dir_.c_str());
    }

    std::string path(const std::string& name) const { return dir_ + "/" + name; }

    // The events so far, in order.
    std::vector<Event> events() {
        std::vector<Event> out;
        alignas(inotify_event) char buf[4096];
        ssize_t n;
        while ((n = ::read(inotify_.get(), buf, sizeof buf)) > 0) {
            for (char* p = buf; p < buf + n;) {
                auto* e = reinterpret_cast<inotify_event*>(p);
                out.push_back({e->mask, e->len ? std::string(e->name) : std::string()});
                p += sizeof(inotify_event) + e->len;
            }
        }
        return out;
    }

    std::vector<uint32_t> events_naming(const std::string& name) {
        std::vector<uint32_t> masks;
        for (const Event& e : events()) {
            if (e.name == name) {
                masks.push_back(e.mask);
            }
        }
        return masks;
    }

    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        if (DIR* d = ::opendir(dir_.c_str())) {
            while (const dirent* e = ::readdir(d)) {
                if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") {
                    names.emplace_back(e->d_name);
                }
            }
            ::closedir(d);
        }
        return names;
    }

private:
    std::string dir_;
    UniqueFd inotify_;
};

bool accepts_connections(const std::string& path) {
    sockaddr_un addr;
    make_unix_address(path, &addr);
    UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return ::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
}

TEST(UnixListenerAccess, appears_listening_with_its_owner_group_and_mode_and_never_changes) {
    WatchedDirectory dir;
    const std::string path = dir.path("vm0.sock");
    UnixListener l(path, {.mode = 0640, .owner = ::geteuid(), .group = ::getegid()});

    // Renamed into place, once: never created at the path, never chowned or
    // chmodded there.
    EXPECT_EQ(dir.events_naming("vm0.sock"), std::vector<uint32_t>{IN_MOVED_TO});
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    EXPECT_EQ(st.st_uid, ::geteuid());
    EXPECT_EQ(st.st_gid, ::getegid());
    EXPECT_TRUE(accepts_connections(path)) << "listening when it appeared";
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"vm0.sock"}) << "no private name left";
}

TEST(UnixListenerAccess, without_owner_or_group_is_made_in_place_with_its_mode) {
    WatchedDirectory dir;
    const std::string path = dir.path("ctl");
    UnixListener l(path, {.mode = 0600});

    EXPECT_EQ(dir.events_naming("ctl"), std::vector<uint32_t>{IN_CREATE});
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(UnixListenerAccess, fails_under_a_file_naming_it) {
    // A missing directory is made (socket_directory_test.cpp); one that
    // cannot be is an error naming the path, and nothing is left behind.
    WatchedDirectory dir;
    ASSERT_EQ(::close(::creat(dir.path("file").c_str(), 0644)), 0);
    const std::string path = dir.path("file") + "/vm0.sock";
    try {
        UnixListener l(path, {.mode = 0660, .group = ::getegid()});
        FAIL() << "made a socket under a file";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), ENOTDIR);
        EXPECT_NE(std::string(e.what()).find(dir.path("file")), std::string::npos) << e.what();
    }
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"file"});
}

TEST(UnixListenerAccess, removes_its_socket_at_the_end) {
    WatchedDirectory dir;
    const std::string path = dir.path("vm1.sock");
    { UnixListener l(path, {.mode = 0660, .group = ::getegid()}); }
    EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace vnet::io
