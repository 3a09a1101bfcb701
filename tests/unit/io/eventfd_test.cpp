#include "io/eventfd.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

namespace vnet::io {
namespace {

TEST(Eventfd, recognises_an_eventfd) {
    UniqueFd e(::eventfd(0, EFD_CLOEXEC));
    EXPECT_TRUE(is_eventfd(e.get()));
}

TEST(Eventfd, rejects_a_pipe_a_socket_a_memfd_and_a_closed_fd) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    UniqueFd r(p[0]), w(p[1]);
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    UniqueFd s0(sv[0]), s1(sv[1]);
    UniqueFd m(::memfd_create("x", MFD_CLOEXEC));
    EXPECT_FALSE(is_eventfd(r.get()));
    EXPECT_FALSE(is_eventfd(s0.get()));
    EXPECT_FALSE(is_eventfd(m.get()));
    EXPECT_FALSE(is_eventfd(-1));
    const int closed = ::dup(m.get());
    ::close(closed);
    EXPECT_FALSE(is_eventfd(closed));
}

TEST(Eventfd, signal_and_drain_round_trip_without_blocking) {
    UniqueFd e = make_eventfd();
    ASSERT_TRUE(e.valid());
    EXPECT_NE(::fcntl(e.get(), F_GETFL) & O_NONBLOCK, 0);
    EXPECT_EQ(drain_eventfd(e.get()), 0u) << "empty: returns at once";
    EXPECT_TRUE(signal_eventfd(e.get()));
    EXPECT_TRUE(signal_eventfd(e.get()));
    EXPECT_EQ(drain_eventfd(e.get()), 2u);
}

TEST(Eventfd, wait_returns_at_once_when_signalled_and_times_out_when_not) {
    UniqueFd e = make_eventfd();
    EXPECT_FALSE(wait_eventfd(e.get(), 0));
    EXPECT_TRUE(signal_eventfd(e.get()));
    EXPECT_TRUE(wait_eventfd(e.get(), 1000));
    EXPECT_EQ(drain_eventfd(e.get()), 1u);
    EXPECT_FALSE(wait_eventfd(e.get(), 1));
}

TEST(Eventfd, set_nonblocking_sets_o_nonblock) {
    UniqueFd e(::eventfd(0, EFD_CLOEXEC));
    EXPECT_TRUE(set_nonblocking(e.get()));
    EXPECT_NE(::fcntl(e.get(), F_GETFL) & O_NONBLOCK, 0);
}

}  // namespace
}  // namespace vnet::io
