// The new vnetd's side of an upgrade in place, as far as it runs without
// privileges: what it does with the offers of the vnetd it replaces.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <stdexcept>

#include "control/daemon.hpp"
#include "control/lifecycle/upgrade/handover_link.hpp"

namespace vnet::control {
namespace {

Config two_null_ports() {
    Config c;
    c.control_socket.clear();
    for (const char* name : {"n0", "n1"}) {
        PortConfig p;
        p.name = name;
        p.settings = NullSettings{};
        c.ports.push_back(p);
    }
    c.connections.emplace_back("n0", "n1");
    return c;
}

struct Pair {
    Pair() {
        int ends[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends), 0);
        old_side = UniqueFd(ends[0]);
        new_side = UniqueFd(ends[1]);
    }
    UniqueFd old_side;
    UniqueFd new_side;
};

TEST(Takeover, closes_the_fds_offered_for_a_port_the_new_config_does_not_have) {
    Pair pair;
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    UniqueFd read_end(pipe_fds[0]);
    {
        UniqueFd write_end(pipe_fds[1]);
        upgrade::HandoverLink old_side{std::move(pair.old_side)};
        const int fds[] = {write_end.get()};
        ASSERT_TRUE(old_side.send(upgrade::handover_offer("tap", "ghost", "ghost", 1), fds));
        ASSERT_TRUE(old_side.send(upgrade::handover_of_type(upgrade::HandoverType::end)));
        pair.old_side = UniqueFd(::dup(old_side.fd()));
    }  // our write end is closed: only the copy in the message is left
    Config c = two_null_ports();
    c.takeover_fd = pair.new_side.get();
    Daemon daemon(std::move(c));
    // The new vnetd closed the copy it received: every write end is gone.
    char byte;
    EXPECT_EQ(::read(read_end.get(), &byte, 1), 0);
}

TEST(Takeover, refuses_a_predecessor_that_speaks_another_version) {
    Pair pair;
    const std::string text = R"({"vnetd_handover":2,"type":"end"})";
    ASSERT_EQ(::send(pair.old_side.get(), text.data(), text.size(), 0),
              static_cast<ssize_t>(text.size()));
    Config c = two_null_ports();
    c.takeover_fd = pair.new_side.get();
    try {
        Daemon daemon(std::move(c));
        FAIL() << "constructed";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "taking over: handover message: version 2, this vnetd speaks 1");
    }
}

TEST(Takeover, refuses_a_takeover_fd_that_is_not_open) {
    Config c = two_null_ports();
    c.takeover_fd = 1000000;
    try {
        Daemon daemon(std::move(c));
        FAIL() << "constructed";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "--takeover-fd 1000000 is not open");
    }
}

TEST(Takeover, refuses_a_predecessor_that_closes_before_its_last_offer) {
    Pair pair;
    pair.old_side.reset();
    Config c = two_null_ports();
    c.takeover_fd = pair.new_side.get();
    try {
        Daemon daemon(std::move(c));
        FAIL() << "constructed";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "taking over: closed");
    }
}

}  // namespace
}  // namespace vnet::control
