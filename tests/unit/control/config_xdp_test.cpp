// The xdp, xdp_mode and xdp_redirect keys of a tap port (docs/USAGE.md "XDP
// on the tap"): what the config file accepts, and the exact message for
// each value Config::validate refuses. Whether the file exists and holds
// the section is found out later, when vnetd loads it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "control/config/config.hpp"

namespace vnet::control {
namespace {

// A tap port "t0" (tap "vt0") cross-connected to a discard port.
Config tap_config() {
    Config c;
    PortConfig tap;
    tap.name = "t0";
    tap.settings = TapSettings{};
    tap.get<TapSettings>()->ifname = "vt0";
    PortConfig sink;
    sink.name = "sink";
    sink.settings = NullSettings{};
    c.ports = {tap, sink};
    c.connections.emplace_back("t0", "sink");
    return c;
}

// The message validate() throws, or "" if it accepts the config.
std::string validation_error(const Config& c) {
    try {
        c.validate();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

// Writes `text` to a private temporary TOML file and loads it.
Config load(const std::string& text) {
    char path[] = "/tmp/vnet_config_xdp_test.XXXXXX";
    int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << text;
    struct Remove {
        const char* p;
        ~Remove() { ::unlink(p); }
    } remove{path};
    return load_config_file(path);
}

TEST(ConfigXdp, accepts_a_tap_without_xdp) {
    EXPECT_EQ(validation_error(tap_config()), "");
}

TEST(ConfigXdp, accepts_file_section_mode_and_redirect) {
    Config c = tap_config();
    c.ports[0].get<TapSettings>()->xdp = "/usr/lib/vnetd/xdp_redirect.bpf.o:xdp";
    c.ports[0].get<TapSettings>()->xdp_mode = "native";
    c.ports[0].get<TapSettings>()->xdp_redirect = "vt1";
    EXPECT_EQ(validation_error(c), "");
}

TEST(ConfigXdp, accepts_every_mode_name) {
    for (const char* mode : {"auto", "native", "generic"}) {
        Config c = tap_config();
        c.ports[0].get<TapSettings>()->xdp = "drop.o";
        c.ports[0].get<TapSettings>()->xdp_mode = mode;
        EXPECT_EQ(validation_error(c), "") << mode;
    }
}

TEST(ConfigXdp, rejects_an_unknown_mode_naming_the_key_and_value) {
    Config c = tap_config();
    c.ports[0].get<TapSettings>()->xdp = "drop.o";
    c.ports[0].get<TapSettings>()->xdp_mode = "drv";
    EXPECT_EQ(validation_error(c),
              "port 't0': xdp_mode must be auto, native or generic, not 'drv'");
}

TEST(ConfigXdp, rejects_a_spec_without_a_file) {
    Config c = tap_config();
    c.ports[0].get<TapSettings>()->xdp = ":xdp";
    EXPECT_EQ(validation_error(c), "port 't0': xdp must be FILE[:SECTION], not ':xdp'");
}

TEST(ConfigXdp, rejects_xdp_on_a_port_that_is_not_a_tap) {
    // A null port has no xdp key to set: refused as it is read.
    Config c;
    std::string error;
    try {
        port_from_settings("sink", "null", {{"xdp", "drop.o"}}, c);
    } catch (const std::invalid_argument& e) {
        error = e.what();
    }
    EXPECT_EQ(error, "port 'sink': xdp is for tap ports");
}

TEST(ConfigXdp, rejects_redirect_without_a_program) {
    Config c = tap_config();
    c.ports[0].get<TapSettings>()->xdp_redirect = "vt1";
    EXPECT_EQ(validation_error(c), "port 't0': xdp_redirect needs xdp (the program to attach)");
}

TEST(ConfigXdp, rejects_a_mode_without_a_program) {
    Config c = tap_config();
    c.ports[0].get<TapSettings>()->xdp_mode = "generic";
    EXPECT_EQ(validation_error(c), "port 't0': xdp_mode needs xdp (the program to attach)");
}

TEST(ConfigXdp, rejects_a_redirect_target_name_longer_than_ifnamsiz) {
    Config c = tap_config();
    c.ports[0].get<TapSettings>()->xdp = "redirect.o";
    c.ports[0].get<TapSettings>()->xdp_redirect = "a23456789012345x";
    EXPECT_EQ(validation_error(c),
              "port 't0': xdp_redirect 'a23456789012345x' is longer than 15 characters");
}

TEST(ConfigXdp, rejects_a_redirect_to_the_ports_own_tap) {
    Config c = tap_config();
    c.ports[0].get<TapSettings>()->xdp = "redirect.o";
    c.ports[0].get<TapSettings>()->xdp_redirect = "vt0";
    EXPECT_EQ(validation_error(c),
              "port 't0': xdp_redirect names the port's own tap 'vt0' (a program sends frames "
              "back with XDP_TX)");
}

TEST(ConfigXdpFile, reads_the_three_keys_of_a_tap_port) {
    Config c = load(R"(
[[port]]
name = "t0"
type = "tap"
tap = "vt0"
xdp = "/usr/lib/vnetd/bpf/xdp_redirect.bpf.o:xdp"
xdp_mode = "generic"
xdp_redirect = "vt1"

[[port]]
name = "sink"
type = "null"

[[connect]]
ports = ["t0", "sink"]
)");
    const PortConfig* t = c.find_port("t0");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->get<TapSettings>()->xdp, "/usr/lib/vnetd/bpf/xdp_redirect.bpf.o:xdp");
    EXPECT_EQ(t->get<TapSettings>()->xdp_mode, "generic");
    EXPECT_EQ(t->get<TapSettings>()->xdp_redirect, "vt1");
}

TEST(ConfigXdpFile, defaults_to_no_program_and_auto_mode) {
    Config c = load(R"(
[[port]]
name = "t0"
type = "tap"
[[port]]
name = "sink"
type = "null"
[[connect]]
ports = ["t0", "sink"]
)");
    const PortConfig* t = c.find_port("t0");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->get<TapSettings>()->xdp, "");
    EXPECT_EQ(t->get<TapSettings>()->xdp_mode, "auto");
    EXPECT_EQ(t->get<TapSettings>()->xdp_redirect, "");
}

TEST(ConfigXdpFile, refuses_a_bad_mode_at_load_with_the_same_message) {
    try {
        load(R"(
[[port]]
name = "t0"
type = "tap"
xdp = "drop.o"
xdp_mode = "fast"
[[port]]
name = "sink"
type = "null"
[[connect]]
ports = ["t0", "sink"]
)");
        FAIL() << "loaded a config with xdp_mode = \"fast\"";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "port 't0': xdp_mode must be auto, native or generic, not 'fast'");
    }
}

}  // namespace
}  // namespace vnet::control
