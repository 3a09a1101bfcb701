// TapXdpProgram's start-up errors that come before any BPF system call, so
// they need no privileges: a missing file, a section the object does not
// have, a redirect with a program that has no redirect_map. Loading and
// attaching are covered by tests/integration/test_tap_xdp.sh (root).
#include "ports/tap/tap_xdp.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "ports/setup_error.hpp"

namespace vnet::ports {
namespace {

// <build>/bpf/NAME: the objects bpf/CMakeLists.txt builds next to
// <build>/tests/vnet_unit_tests (a build dependency of the test binary).
std::string built_object(const std::string& name) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
        return {};
    }
    auto path = exe.parent_path().parent_path() / "bpf" / name;
    return std::filesystem::exists(path) ? path.string() : std::string();
}

// The PortSetupError the constructor throws ("" if none), and its errno.
std::string setup_error(const TapXdpOptions& o, int* error_number = nullptr) {
    try {
        TapXdpProgram program("tap 'vt0'", 1, o);
    } catch (const PortSetupError& e) {
        if (error_number != nullptr) {
            *error_number = e.error_number();
        }
        return e.what();
    }
    return "";
}

TEST(TapXdpProgram, a_missing_file_names_the_device_the_file_and_the_errno) {
    TapXdpOptions o;
    o.program.file = "/nonexistent/xdp.o";
    int err = 0;
    EXPECT_EQ(setup_error(o, &err),
              "tap 'vt0': XDP program '/nonexistent/xdp.o': open failed: No such file or "
              "directory (ENOENT); check the path (a relative one is taken from vnetd's working "
              "directory)");
    EXPECT_EQ(err, ENOENT);
}

TEST(TapXdpProgram, a_file_that_is_no_bpf_object_is_refused_at_open) {
    TapXdpOptions o;
    o.program.file = "/proc/self/status";
    std::string message = setup_error(o);
    EXPECT_EQ(message.rfind("tap 'vt0': XDP program '/proc/self/status': open failed: ", 0), 0u)
        << message;
}

TEST(TapXdpProgram, a_missing_section_lists_what_the_object_has) {
    std::string file = built_object("xdp_drop.bpf.o");
    ASSERT_FALSE(file.empty()) << "bpf/xdp_drop.bpf.o not built (vnet_bpf_programs)";
    TapXdpOptions o;
    o.program = {file, "xdp/nothere"};
    EXPECT_EQ(setup_error(o), "tap 'vt0': XDP program '" + file +
                                  "' has no program in section (or named) 'xdp/nothere' (it "
                                  "has xdp_drop in 'xdp')");
}

TEST(TapXdpProgram, a_redirect_needs_the_redirect_map) {
    std::string file = built_object("xdp_pass.bpf.o");
    ASSERT_FALSE(file.empty()) << "bpf/xdp_pass.bpf.o not built (vnet_bpf_programs)";
    TapXdpOptions o;
    o.program = {file, "xdp"};
    o.redirect_ifindex = 1;
    EXPECT_EQ(setup_error(o), "tap 'vt0': xdp_redirect: XDP program '" + file +
                                  "' section 'xdp' has no devmap named 'redirect_map' (the "
                                  "shipped xdp_redirect.bpf.o has one)");
}

TEST(XdpRedirectTarget, an_unknown_interface_names_the_key) {
    try {
        xdp_redirect_target("tap 'vt0'", "vnet-nosuch0");
        FAIL() << "resolved a nonexistent interface";
    } catch (const PortSetupError& e) {
        EXPECT_STREQ(e.what(),
                     "tap 'vt0': xdp_redirect 'vnet-nosuch0': no such network device in vnetd's "
                     "network namespace");
    }
}

}  // namespace
}  // namespace vnet::ports
