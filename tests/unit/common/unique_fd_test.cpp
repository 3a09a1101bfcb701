#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

namespace vnet {
namespace {

bool fd_is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1;
}

TEST(UniqueFd, closes_its_fd_when_destroyed) {
    int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(raw, 0);
    { UniqueFd fd(raw); }
    EXPECT_FALSE(fd_is_open(raw));
}

TEST(UniqueFd, moving_transfers_ownership_without_closing) {
    UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    int raw = a.get();
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
    EXPECT_TRUE(fd_is_open(raw));
}

}  // namespace
}  // namespace vnet
