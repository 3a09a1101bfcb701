// What an operator reads when a config is wrong: a missing file said in
// words, relative paths refused (one meaning whatever the working
// directory), and the queue-pair range said the same way by the key's
// parser and by validation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "control/config/config.hpp"

namespace vnet::control {
namespace {

template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

std::string file_with(const std::string& text) {
    char path[] = "/tmp/vnetd-config-errors-XXXXXX";
    const int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << text;
    return path;
}

PortConfig vm_port(const std::string& socket_path) {
    PortConfig p;
    p.name = "vm0";
    p.settings = VhostUserSettings{};
    p.get<VhostUserSettings>()->socket_path = socket_path;
    return p;
}

TEST(ConfigErrors, a_missing_file_is_said_in_words) {
    EXPECT_EQ(error_of([] { load_config_file("/nonexistent/vnetd.toml"); }),
              "config /nonexistent/vnetd.toml: no such file");
}

TEST(ConfigErrors, relative_paths_are_refused) {
    Config c;
    c.ports = {vm_port("vm0.sock")};
    EXPECT_EQ(error_of([&] { c.validate(); }),
              "port 'vm0': socket_path must be an absolute path, not 'vm0.sock'");
    c.ports = {vm_port("/run/vnetd/vm0.sock")};
    EXPECT_EQ(error_of([&] { c.validate(); }), "");
    c.control_socket = "run/vnetd.ctl";
    EXPECT_EQ(error_of([&] { c.validate(); }),
              "control_socket must be an absolute path, not 'run/vnetd.ctl'");
    c.control_socket = "";  // none
    c.state_file = "state.json";
    EXPECT_EQ(error_of([&] { c.validate(); }),
              "state_file must be an absolute path, not 'state.json'");
    c.state_file = "";
    c.stats_file = "./stats.json";
    EXPECT_EQ(error_of([&] { c.validate(); }),
              "stats_file must be an absolute path, not './stats.json'");
}

TEST(ConfigErrors, a_relative_xdp_file_is_refused_a_shipped_name_is_not) {
    Config c;
    PortConfig tap;
    tap.name = "t0";
    tap.settings = TapSettings{};
    tap.get<TapSettings>()->ifname = "t0";
    tap.get<TapSettings>()->xdp = "bpf/mine.o:xdp";
    c.ports = {tap};
    EXPECT_EQ(error_of([&] { c.validate(); }),
              "port 't0': xdp FILE must be an absolute path or the bare name of a shipped "
              "program, not 'bpf/mine.o'");
    c.ports[0].get<TapSettings>()->xdp = "xdp_drop";
    EXPECT_EQ(error_of([&] { c.validate(); }), "");
}

TEST(ConfigErrors, relative_paths_in_a_file_are_refused) {
    const std::string path =
        file_with("[[port]]\nname = \"vm0\"\ntype = \"vhost-user\"\nsocket_path = \"vm0.sock\"\n");
    EXPECT_EQ(error_of([&] { load_config_file(path); }),
              "port 'vm0': socket_path must be an absolute path, not 'vm0.sock'");
    ::unlink(path.c_str());
}

TEST(ConfigErrors, the_queue_pair_range_reads_the_same_everywhere) {
    const std::string expected = "port 'vm0': queue_pairs must be 1..128, not '300'";
    Config c;
    EXPECT_EQ(error_of([&] {
                  port_from_settings("vm0", "vhost-user", {{"queue_pairs", "300"}}, c);
              }),
              expected);
    EXPECT_EQ(error_of([&] {
                  port_from_settings("vm0", "vhost-user", {{"queue_pairs", "70000"}}, c);
              }),
              "port 'vm0': queue_pairs must be 1..128, not '70000'");
    c.ports = {vm_port("/run/vnetd/vm0.sock")};
    c.ports[0].queue_pairs = 300;
    EXPECT_EQ(error_of([&] { c.validate(); }), expected);
}

}  // namespace
}  // namespace vnet::control
