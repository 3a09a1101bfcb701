// [[switch]] tables and the switch keys of a port (docs/USAGE.md "The L2
// switch"): what the config file accepts, and the exact message for what it
// refuses, each naming the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "control/config/config.hpp"
#include "control/config/option_table.hpp"

namespace vnet::control {
namespace {

// The config load_config_file makes of `text`; `error` gets its message.
Config load(const std::string& text, std::string* error) {
    char path[] = "/tmp/vnet_config_switch_test.XXXXXX";
    int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << text;
    Config c;
    try {
        c = load_config_file(path);
    } catch (const std::invalid_argument& e) {
        // Parse errors name the file first; Config::validate's do not.
        const std::string what = e.what();
        const std::string prefix = std::string(path) + ": ";
        *error = what.starts_with(prefix) ? what.substr(prefix.size()) : what;
    }
    ::unlink(path);
    return c;
}

std::string load_error(const std::string& text) {
    std::string error;
    load(text, &error);
    return error;
}

const std::string kSwitch = R"(
[[switch]]
name = "s0"
mac_aging_s = 60
mac_table_size = 1024
[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "/tmp/vm0.sock"
switch = "s0"
vlan = 10
allowed_macs = ["02:00:00:00:00:01", "02:00:00:00:00:0A"]
[[port]]
name = "up"
type = "tap"
switch = "s0"
trunk = [10, 20]
vlan = 30
)";

TEST(ConfigSwitch, a_switch_and_its_ports_keys_are_read) {
    std::string error;
    Config c = load(kSwitch, &error);
    ASSERT_EQ(error, "");
    ASSERT_EQ(c.switches.size(), 1u);
    EXPECT_EQ(c.switches[0].name, "s0");
    EXPECT_EQ(c.switches[0].mac_aging_s, 60u);
    EXPECT_EQ(c.switches[0].mac_table_size, 1024u);
    const PortConfig* vm = c.find_port("vm0");
    EXPECT_EQ(vm->switch_name, "s0");
    EXPECT_EQ(vm->vlan, std::optional<uint16_t>(10));
    ASSERT_EQ(vm->allowed_macs.size(), 2u);
    EXPECT_EQ(vm->allowed_macs[1], (packet::MacAddress{2, 0, 0, 0, 0, 0x0a}));
    const PortConfig* up = c.find_port("up");
    EXPECT_EQ(up->trunk, (std::vector<uint16_t>{10, 20}));
    EXPECT_EQ(c.switch_of("up"), std::optional<size_t>(0));
    EXPECT_EQ(c.queue_pairs_of(*up), 1u);  // a tap on a switch has no VM peer
}

TEST(ConfigSwitch, defaults_are_the_linux_bridges) {
    std::string error;
    Config c = load("[[switch]]\nname = \"s0\"\n", &error);
    ASSERT_EQ(error, "");
    EXPECT_EQ(c.switches[0].mac_aging_s, 300u);
    EXPECT_EQ(c.switches[0].mac_table_size, 8192u);
}

TEST(ConfigSwitch, bad_values_name_the_key) {
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\nmac_table_size = 0\n"),
              "switch 's0': mac_table_size must be 1..1048576, not '0'");
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\nmac_aging_s = 0\n"),
              "switch 's0': mac_aging_s must be 1..1000000, not '0'");
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\nflood = 1\n"),
              "switch 's0': unknown key 'flood'");
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\n[[port]]\nname = \"t\"\ntype = \"tap\"\n"
                         "switch = \"s0\"\nvlan = 4095\n"),
              "port 't': vlan must be 1..4094, not '4095'");
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\n[[port]]\nname = \"t\"\ntype = \"tap\"\n"
                         "switch = \"s0\"\ntrunk = [10, 0]\n"),
              "port 't': trunk must be 1..4094, not '0'");
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\n[[port]]\nname = \"t\"\ntype = \"tap\"\n"
                         "switch = \"s0\"\nallowed_macs = [\"02:00:00:00:00\"]\n"),
              "port 't': allowed_macs must be a MAC address such as 02:00:00:00:00:01, not "
              "'02:00:00:00:00'");
}

TEST(ConfigSwitch, wiring_mistakes_are_refused_with_the_reason) {
    EXPECT_EQ(load_error("[[port]]\nname = \"t\"\ntype = \"tap\"\nswitch = \"nope\"\n"),
              "port 't': switch 'nope' is not defined (no [[switch]] of that name)");
    EXPECT_EQ(load_error("[[port]]\nname = \"t\"\ntype = \"tap\"\nvlan = 5\n"),
              "port 't': vlan, trunk and allowed_macs need switch");
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\n[[switch]]\nname = \"s0\"\n"),
              "switch name 's0' is used twice");
    EXPECT_EQ(load_error("[[switch]]\nname = \"s0\"\n"
                         "[[port]]\nname = \"a\"\ntype = \"tap\"\nswitch = \"s0\"\n"
                         "[[port]]\nname = \"b\"\ntype = \"null\"\n"
                         "[[connect]]\nports = [\"a\", \"b\"]\n"),
              "port 'a': on switch 's0' and in a [[connect]] (a port is in one or the other)");
}

// vnetctl switch add: the same rows, defaults and messages as a [[switch]].
std::string settings_error(const std::vector<std::pair<std::string, std::string>>& settings) {
    try {
        switch_from_settings("s1", settings);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(ConfigSwitch, a_switch_from_settings_reads_the_switch_keys_with_their_defaults) {
    const SwitchConfig plain = switch_from_settings("s1", {});
    EXPECT_EQ(plain.name, "s1");
    EXPECT_EQ(plain.mac_aging_s, 300u);
    EXPECT_EQ(plain.mac_table_size, 8192u);
    EXPECT_EQ(plain.destination_hold_us, 100u);
    const SwitchConfig set = switch_from_settings(
        "s1", {{"mac_aging_s", "60"}, {"mac_table_size", "1024"}, {"destination_hold_us", "0"}});
    EXPECT_EQ(set.mac_aging_s, 60u);
    EXPECT_EQ(set.mac_table_size, 1024u);
    EXPECT_EQ(set.destination_hold_us, 0u);
}

TEST(ConfigSwitch, a_switch_from_settings_refuses_what_the_file_refuses_with_its_message) {
    EXPECT_EQ(settings_error({{"mac_table_size", "0"}}),
              "switch 's1': mac_table_size must be 1..1048576, not '0'");
    EXPECT_EQ(settings_error({{"mac_aging_s", "soon"}}),
              "switch 's1': mac_aging_s must be 1..1000000, not 'soon'");
    EXPECT_EQ(settings_error({{"flood", "1"}}), "switch 's1': unknown key 'flood'");
    // A port key is no switch key.
    EXPECT_EQ(settings_error({{"vlan", "10"}}), "switch 's1': unknown key 'vlan'");
}

TEST(ConfigSwitch, switch_keys_are_no_flags) {
    Config c;
    EXPECT_THROW(apply_flag(c, *find_option(OptionScope::switch_, "mac_aging_s"), "5"),
                 std::invalid_argument);
}

}  // namespace
}  // namespace vnet::control
