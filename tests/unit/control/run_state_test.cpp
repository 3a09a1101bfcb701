// The run-time state file (run_state.hpp): what it writes of a switch and a
// port comes back the same through the parsers vnetctl's additions use, a
// rewrite replaces the file whole, and what does not parse is refused with
// a reason.
#include "control/lifecycle/run_state.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "control/config/option_table.hpp"

namespace vnet::control {
namespace {

// A fresh directory, removed with what is in it.
struct TempDir {
    std::string path;
    TempDir() {
        char templ[] = "/tmp/vnet_run_state_test.XXXXXX";
        path = ::mkdtemp(templ);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

std::string file_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Every port key as text, by the option table: two ports are the same
// config when these are.
Settings all_port_keys(const PortConfig& p) {
    Settings out;
    for (const OptionSpec& o : option_table()) {
        if (o.scope == OptionScope::port) {
            out.emplace_back(std::string(o.key), o.get(Config{}, &p));
        }
    }
    return out;
}

PortConfig port_back(const RunStatePort& item) {
    Config scratch;
    return port_from_settings(item.name, item.type, item.settings, scratch);
}

PortConfig switch_vm() {
    Config scratch;
    return port_from_settings("vm1", "vhost-user",
                              {{"socket_path", "/run/vnetd/vm1.sock"},
                               {"switch", "s1"},
                               {"vlan", "7"},
                               {"ingress_policing_rate", "10000"},
                               {"allowed_macs", "02:00:00:00:00:01"}},
                              scratch);
}

TEST(RunState, a_port_keeps_only_the_keys_that_differ_from_a_new_ports) {
    const RunStatePort item = run_state_port(switch_vm(), "");
    EXPECT_EQ(item.type, "vhost-user");
    EXPECT_EQ(item.settings, (Settings{{"socket_path", "/run/vnetd/vm1.sock"},
                                       {"ingress_policing_rate", "10000"},
                                       {"switch", "s1"},
                                       {"vlan", "7"},
                                       {"allowed_macs", "02:00:00:00:00:01"}}));
}

TEST(RunState, a_tap_named_as_its_device_has_no_tap_key) {
    Config scratch;
    const PortConfig t = port_from_settings("t1", "tap", {}, scratch);
    EXPECT_TRUE(run_state_port(t, "vm0").settings.empty());
    const PortConfig other = port_from_settings("t2", "tap", {{"tap", "dev2"}}, scratch);
    EXPECT_EQ(run_state_port(other, "").settings, (Settings{{"tap", "dev2"}}));
}

TEST(RunState, switches_and_ports_come_back_the_same_through_the_file_text) {
    SwitchConfig sw = switch_from_settings("s1", {{"mac_aging_s", "60"}});
    Config scratch;
    const PortConfig uplink = port_from_settings(
        "up1", "vxlan", {{"switch", "s1"}, {"vni", "42"}, {"vxlan_remote", "192.0.2.1,192.0.2.2"}},
        scratch);
    RunState state;
    state.switches = {run_state_switch(sw), run_state_switch(switch_from_settings("s2", {}))};
    state.ports = {run_state_port(switch_vm(), ""), run_state_port(uplink, ""),
                   run_state_port(port_from_settings("t1", "tap", {}, scratch), "vm1")};

    const RunState back = parse_run_state(run_state_text(state));

    ASSERT_EQ(back.switches.size(), 2u);
    EXPECT_EQ(back.switches[0].name, "s1");
    EXPECT_EQ(switch_from_settings("s1", back.switches[0].settings).mac_aging_s, 60u);
    EXPECT_TRUE(back.switches[1].settings.empty());
    ASSERT_EQ(back.ports.size(), 3u);
    EXPECT_EQ(back.ports, state.ports);
    EXPECT_EQ(all_port_keys(port_back(back.ports[0])), all_port_keys(switch_vm()));
    EXPECT_EQ(all_port_keys(port_back(back.ports[1])), all_port_keys(uplink));
    EXPECT_EQ(back.ports[2].peer, "vm1");
}

TEST(RunState, a_rewrite_replaces_the_file_whole_and_leaves_no_temporary) {
    TempDir dir;
    const std::string path = dir.path + "/state.json";
    EXPECT_FALSE(read_run_state(path).has_value());  // none yet: the first start

    RunState two;
    two.ports = {run_state_port(switch_vm(), ""), run_state_port(switch_vm(), "")};
    two.ports[1].name = "vm2";
    write_run_state(path, two);
    const std::string before = file_text(path);
    struct stat first {};
    ASSERT_EQ(::stat(path.c_str(), &first), 0);

    RunState one;
    one.ports = {two.ports[1]};
    write_run_state(path, one);

    struct stat second {};
    ASSERT_EQ(::stat(path.c_str(), &second), 0);
    // Renamed over, not written in place: a reader (or a crash) sees the
    // old file or the new one, never a mix.
    EXPECT_NE(first.st_ino, second.st_ino);
    EXPECT_NE(file_text(path), before);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    const std::optional<RunState> back = read_run_state(path);
    ASSERT_TRUE(back.has_value());
    ASSERT_EQ(back->ports.size(), 1u);
    EXPECT_EQ(back->ports[0].name, "vm2");
}

TEST(RunState, a_write_into_a_missing_directory_names_the_path) {
    try {
        write_run_state("/nonexistent-vnet-dir/state.json", RunState{});
        FAIL() << "wrote into a missing directory";
    } catch (const std::system_error& e) {
        EXPECT_NE(std::string(e.what()).find("open /nonexistent-vnet-dir/state.json.tmp"),
                  std::string::npos)
            << e.what();
    }
}

std::string parse_error(const std::string& text) {
    try {
        parse_run_state(text);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(parsed)";
}

TEST(RunState, refuses_what_does_not_parse_with_the_reason) {
    EXPECT_EQ(parse_error("{\"version\": 1, \"ports\": [{\"name\""), "not JSON");
    EXPECT_EQ(parse_error("[]"), "not a JSON object");
    EXPECT_EQ(parse_error("{\"version\": 2}"), "\"version\" must be 1");
    EXPECT_EQ(parse_error("{\"version\": 1, \"ports\": {}}"), "\"ports\" must be an array");
    EXPECT_EQ(parse_error("{\"version\": 1, \"ports\": [{\"type\": \"tap\"}]}"),
              "port 1 has no \"name\"");
    EXPECT_EQ(parse_error("{\"version\": 1, \"switches\": [{\"name\": \"s\", \"settings\": "
                          "{\"mac_aging_s\": 60}}]}"),
              "switch 1: setting \"mac_aging_s\" must be a string");
    EXPECT_EQ(parse_error("{\"version\": 1}"), "(parsed)");  // nothing added yet
}

TEST(RunState, a_bad_file_is_set_aside_beside_it) {
    TempDir dir;
    const std::string path = dir.path + "/state.json";
    std::ofstream(path) << "garbage";
    EXPECT_THROW(read_run_state(path), std::invalid_argument);
    EXPECT_EQ(set_aside_run_state(path), path + ".bad");
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_EQ(file_text(path + ".bad"), "garbage");
    EXPECT_FALSE(read_run_state(path).has_value());
}

}  // namespace
}  // namespace vnet::control
