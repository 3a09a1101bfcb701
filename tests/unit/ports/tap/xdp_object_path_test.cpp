// Where --tap-xdp FILE is found (ports/tap/xdp_object_path.hpp): as written
// when it has a '/' or exists here, else among the shipped programs beside
// the binary. The unit tests run from build/tests/, so the shipped
// directory they find is the build tree's bpf/.
#include "ports/tap/xdp_object_path.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace vnet::ports {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(XdpObjectPath, finds_a_shipped_program_by_name_with_or_without_its_suffix) {
    const std::string by_name = find_xdp_object("xdp_drop");
    EXPECT_TRUE(ends_with(by_name, "/bpf/xdp_drop.bpf.o")) << by_name;
    EXPECT_TRUE(std::filesystem::is_regular_file(by_name)) << by_name;
    EXPECT_EQ(find_xdp_object("xdp_drop.bpf.o"), by_name);
    const std::vector<std::string> dirs = shipped_xdp_object_dirs();
    EXPECT_NE(
        std::find(dirs.begin(), dirs.end(), std::filesystem::path(by_name).parent_path().string()),
        dirs.end());
}

TEST(XdpObjectPath, takes_a_path_or_an_unknown_name_as_written) {
    EXPECT_EQ(find_xdp_object("./xdp_drop"), "./xdp_drop");
    EXPECT_EQ(find_xdp_object("/nonexistent/xdp_drop.bpf.o"), "/nonexistent/xdp_drop.bpf.o");
    EXPECT_EQ(find_xdp_object("no_such_program"), "no_such_program");
    EXPECT_EQ(find_xdp_object(""), "");
}

}  // namespace
}  // namespace vnet::ports
