// The spellings shared by the config file, the command line and the loader:
// "FILE[:SECTION]" and the attach mode names.
#include "ports/tap/xdp_options.hpp"

#include <gtest/gtest.h>

namespace vnet::ports {
namespace {

TEST(SplitXdpSpec, a_file_alone_means_the_first_xdp_program) {
    XdpProgramSpec s = split_xdp_spec("bpf/xdp_drop.bpf.o");
    EXPECT_EQ(s.file, "bpf/xdp_drop.bpf.o");
    EXPECT_EQ(s.section, "");
}

TEST(SplitXdpSpec, splits_at_the_last_colon) {
    XdpProgramSpec s = split_xdp_spec("/srv/a:b/prog.o:xdp/drop");
    EXPECT_EQ(s.file, "/srv/a:b/prog.o");
    EXPECT_EQ(s.section, "xdp/drop");
}

TEST(SplitXdpSpec, a_trailing_colon_names_a_file_that_contains_a_colon) {
    XdpProgramSpec s = split_xdp_spec("/srv/a:b/prog.o:");
    EXPECT_EQ(s.file, "/srv/a:b/prog.o");
    EXPECT_EQ(s.section, "");
}

TEST(SplitXdpSpec, a_leading_colon_leaves_the_file_empty) {
    EXPECT_EQ(split_xdp_spec(":xdp").file, "");
}

TEST(XdpModeNames, round_trip) {
    for (XdpMode m : {XdpMode::auto_select, XdpMode::native, XdpMode::generic}) {
        EXPECT_EQ(parse_xdp_mode(to_string(m)), m);
    }
    EXPECT_STREQ(to_string(XdpMode::auto_select), "auto");
}

TEST(XdpModeNames, rejects_the_ip_link_spellings) {
    // ip link says xdpdrv/xdpgeneric; the config key says native/generic.
    EXPECT_FALSE(parse_xdp_mode("xdpdrv"));
    EXPECT_FALSE(parse_xdp_mode("drv"));
    EXPECT_FALSE(parse_xdp_mode(""));
    EXPECT_FALSE(parse_xdp_mode("Native"));
}

}  // namespace
}  // namespace vnet::ports
