// The one option table: config keys, flags, the stats' datapath object and
// docs/USAGE.md all come from its rows, and a key the table does not know
// is an error naming the key and the file.
#include "control/config/option_table.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace vnet::control {
namespace {

// The message load_config_file throws for `text`, or "" if it loads.
std::string load_error(const std::string& text, std::string* path_out = nullptr) {
    char path[] = "/tmp/vnet_option_table_test.XXXXXX";
    int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << text;
    if (path_out != nullptr) {
        *path_out = path;
    }
    std::string error;
    try {
        load_config_file(path);
    } catch (const std::invalid_argument& e) {
        error = e.what();
    }
    ::unlink(path);
    return error;
}

const char* kTwoPorts = R"(
[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "/tmp/vm0.sock"
[[port]]
name = "t0"
type = "tap"
[[connect]]
ports = ["vm0", "t0"]
)";

TEST(OptionTable, an_unknown_datapath_key_names_the_key_and_the_file) {
    std::string path;
    std::string error = load_error(std::string("[datapath]\ntx_bach = 32\n") + kTwoPorts, &path);
    EXPECT_EQ(error, path + ": [datapath]: unknown key 'tx_bach' (did you mean 'tx_batch'?)");
}

TEST(OptionTable, an_unknown_port_key_names_the_port_the_key_and_the_file) {
    std::string path;
    std::string error = load_error(
        "[[port]]\nname = \"vm0\"\ntype = \"vhost-user\"\nsockt_path = \"/tmp/x\"\n", &path);
    EXPECT_EQ(error, path + ": port 'vm0': unknown key 'sockt_path' (did you mean 'socket_path'?)");
}

TEST(OptionTable, an_unknown_table_and_a_daemon_key_are_errors_too) {
    std::string path;
    std::string error = load_error("[datapth]\ntx_batch = 1\n", &path);
    EXPECT_EQ(error, path +
                         ": unknown key 'datapth' (tables: [daemon], [datapath], [[switch]], "
                         "[[port]], [[connect]]) (did you mean 'datapath'?)");
    error = load_error("[daemon]\nlog = \"info\"\n", &path);
    EXPECT_EQ(error, path + ": [daemon]: unknown key 'log'");
    error =
        load_error(std::string(kTwoPorts) + "[[connect]]\nports = [\"a\", \"b\"]\nx = 1\n", &path);
    EXPECT_EQ(error, path + ": each [[connect]] needs ports = [\"a\", \"b\"] and nothing else");
}

TEST(OptionTable, a_malformed_value_names_the_key_and_the_file) {
    std::string path;
    std::string error = load_error(std::string("[datapath]\ngro = \"maybe\"\n") + kTwoPorts, &path);
    EXPECT_EQ(error, path + ": [datapath]: gro must be on or off, not 'maybe'");
    error = load_error(std::string("[datapath]\ntx_batch = -1\n") + kTwoPorts, &path);
    EXPECT_EQ(error, path + ": [datapath]: tx_batch must be 0..64, not '-1'");
    // The same range as a value above it and Config::validate say.
    error = load_error(std::string("[datapath]\ntx_batch = 70000\n") + kTwoPorts, &path);
    EXPECT_EQ(error, path + ": [datapath]: tx_batch must be 0..64, not '70000'");
    error = load_error(std::string("[datapath]\ntx_batch = 1.5\n") + kTwoPorts, &path);
    EXPECT_EQ(
        error,
        path + ": [datapath]: tx_batch must be a string, a number, on/off or a list of those");
}

TEST(OptionTable, the_file_and_the_flags_reach_the_same_fields) {
    char path[] = "/tmp/vnet_option_table_test.XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << "[daemon]\nstats_interval_s = 5\n[datapath]\ntx_batch = 16\n"
                           "gro = false\nsubmit = \"writev\"\nworker_cpus = [0, 1]\n"
                        << kTwoPorts;
    Config c = load_config_file(path);
    ::unlink(path);
    EXPECT_EQ(c.stats_interval_s, 5u);
    EXPECT_EQ(c.datapath.tx_batch, 16);
    EXPECT_FALSE(c.datapath.gro);
    EXPECT_EQ(c.datapath.submit, io::BatchMode::writev);
    EXPECT_EQ(c.datapath.worker_cpus, (std::vector<int>{0, 1}));

    apply_flag(c, *find_option(OptionScope::datapath, "tx_batch"), "8");
    apply_flag(c, *find_option(OptionScope::datapath, "worker_cpus"), "1");
    EXPECT_EQ(c.datapath.tx_batch, 8);
    EXPECT_EQ(c.datapath.worker_cpus, (std::vector<int>{1}));
}

TEST(OptionTable, a_port_flag_applies_to_every_port_of_its_kind) {
    Config c;
    PortConfig vm;
    vm.name = "vm0";
    vm.settings = VhostUserSettings{};
    PortConfig tap;
    tap.name = "t0";
    tap.settings = TapSettings{};
    c.ports = {vm, tap};
    apply_flag(c, *find_option(OptionScope::port, "napi"), "on");
    apply_flag(c, *find_option(OptionScope::port, "mtu"), "9000");
    EXPECT_EQ(c.ports[0].get<TapSettings>(), nullptr);  // a tap option
    EXPECT_TRUE(c.ports[1].get<TapSettings>()->napi);
    EXPECT_EQ(c.ports[0].mtu, 9000);  // every port
    EXPECT_EQ(c.ports[1].mtu, 9000);
    apply_flag(c, *find_option(OptionScope::port, "napi_frags"), "on");
    EXPECT_TRUE(c.ports[1].get<TapSettings>()->napi_frags);
    EXPECT_TRUE(c.ports[1].get<TapSettings>()->napi);  // tun needs IFF_NAPI with IFF_NAPI_FRAGS
}

TEST(OptionTable, streaming_stores_is_a_vm_port_option_on_by_default) {
    char path[] = "/tmp/vnet_option_table_test.XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << "[[port]]\nname = \"vm0\"\ntype = \"vhost-user\"\n"
                           "socket_path = \"/tmp/vm0.sock\"\nstreaming_stores = false\n"
                           "[[port]]\nname = \"vm1\"\ntype = \"vhost-user\"\n"
                           "socket_path = \"/tmp/vm1.sock\"\n";
    const Config c = load_config_file(path);
    ::unlink(path);
    ASSERT_EQ(c.ports.size(), 2u);
    EXPECT_FALSE(c.ports[0].get<VhostUserSettings>()->streaming_stores);
    EXPECT_TRUE(c.ports[1].get<VhostUserSettings>()->streaming_stores);

    Config flags;
    PortConfig vm;
    vm.settings = VhostUserSettings{};
    PortConfig tap;
    tap.settings = TapSettings{};
    flags.ports = {vm, tap};
    apply_flag(flags, *find_option(OptionScope::port, "streaming_stores"), "off");
    EXPECT_FALSE(flags.ports[0].get<VhostUserSettings>()->streaming_stores);
    EXPECT_EQ(flags.ports[1].get<VhostUserSettings>(), nullptr);  // a VM port option: not the tap's
}

TEST(OptionTable, flags_are_the_keys_with_dashes) {
    EXPECT_EQ(flag_of(*find_option(OptionScope::datapath, "tx_batch")), "--tx-batch");
    EXPECT_EQ(flag_of(*find_option(OptionScope::datapath, "busy_poll_us")), "--busy-poll-us");
    EXPECT_EQ(flag_of(*find_option(OptionScope::port, "queue_pairs")), "--queue-pairs");
    EXPECT_EQ(find_option(OptionScope::datapath, "worker_cpus")->flag_alias, "--cpu");
    EXPECT_EQ(find_option(OptionScope::datapath, "no_such_key"), nullptr);
}

// The kinds' rows come from their own files: one key, one meaning, still.
TEST(OptionTable, keys_are_unique_within_a_scope) {
    const std::span<const OptionSpec> rows = option_table();
    for (size_t i = 0; i < rows.size(); ++i) {
        for (size_t j = i + 1; j < rows.size(); ++j) {
            EXPECT_FALSE(rows[i].scope == rows[j].scope && rows[i].key == rows[j].key)
                << rows[i].key;
        }
    }
}

TEST(OptionTable, every_default_reads_back_through_its_own_setter) {
    const Config defaults;
    for (const OptionSpec& o : option_table()) {
        Config c;
        if (o.scope == OptionScope::switch_) {
            c.switches.emplace_back();  // switch rows set the [[switch]] being parsed
        }
        PortConfig p;  // of the row's kind, for a kind's own key
        if (o.port_type) {
            p.settings = default_settings(*o.port_type);
        }
        const std::string text = o.get(defaults, &p);
        if (text.empty()) {
            continue;  // unset by default
        }
        EXPECT_NO_THROW(o.set(c, &p, text)) << o.key << " = " << text;
        EXPECT_EQ(o.get(c, &p), text) << o.key;
    }
}

TEST(OptionTable, the_stats_datapath_object_has_every_datapath_key_typed) {
    const nlohmann::json j = datapath_json(Config{});
    size_t datapath_keys = 0;
    for (const OptionSpec& o : option_table()) {
        if (o.scope == OptionScope::datapath) {
            ++datapath_keys;
            EXPECT_TRUE(j.contains(std::string(o.key))) << o.key;
        }
    }
    EXPECT_EQ(j.size(), datapath_keys);
    EXPECT_EQ(j["tx_batch"], 64);
    EXPECT_EQ(j["gro"], true);
    EXPECT_EQ(j["submit"], "io_uring");
    EXPECT_EQ(j["worker_cpus"], "");
}

TEST(OptionTable, docs_usage_md_holds_the_generated_option_table) {
    std::ifstream in(VNET_SOURCE_DIR "/docs/USAGE.md");
    ASSERT_TRUE(in) << "docs/USAGE.md not found";
    std::stringstream doc;
    doc << in.rdbuf();
    const std::string table = markdown_table();
    EXPECT_NE(doc.str().find(table), std::string::npos)
        << "docs/USAGE.md's option table is not the option table; replace it with:\n"
        << table;
}

}  // namespace
}  // namespace vnet::control
