// queue_pairs (docs/USAGE.md "Multiqueue"): how many queue pairs each port
// serves when the key is set and when it is not, and the exact message for
// each value Config::validate refuses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include "control/config/config.hpp"

namespace vnet::control {
namespace {

PortConfig port(const std::string& name, PortType type, std::optional<uint16_t> pairs = {}) {
    PortConfig p;
    p.name = name;
    p.settings = default_settings(type);
    if (VhostUserSettings* v = p.get<VhostUserSettings>()) {
        v->socket_path = "/tmp/" + name + ".sock";
    }
    if (TapSettings* t = p.get<TapSettings>()) {
        t->ifname = name;
    }
    p.queue_pairs = pairs;
    return p;
}

Config pair_of(PortConfig a, PortConfig b) {
    Config c;
    c.connections.emplace_back(a.name, b.name);
    c.ports = {std::move(a), std::move(b)};
    return c;
}

std::string validation_error(const Config& c) {
    try {
        c.validate();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(ConfigQueuePairs, a_vm_port_offers_8_queue_pairs_unless_told) {
    Config c = pair_of(port("vm0", PortType::vhost_user), port("t0", PortType::tap));
    EXPECT_EQ(c.queue_pairs_of(c.ports[0]), kDefaultQueuePairs);
    EXPECT_EQ(kDefaultQueuePairs, 8);
}

TEST(ConfigQueuePairs, a_tap_follows_its_vm_peer) {
    Config c = pair_of(port("vm0", PortType::vhost_user, 4), port("t0", PortType::tap));
    EXPECT_EQ(c.queue_pairs_of(c.ports[1]), 4);
    Config d = pair_of(port("vm0", PortType::vhost_user), port("t0", PortType::tap));
    EXPECT_EQ(d.queue_pairs_of(d.ports[1]), kDefaultQueuePairs);
}

TEST(ConfigQueuePairs, a_tap_of_its_own_setting_keeps_it) {
    Config c = pair_of(port("vm0", PortType::vhost_user, 4), port("t0", PortType::tap, 2));
    EXPECT_EQ(c.queue_pairs_of(c.ports[1]), 2);
}

TEST(ConfigQueuePairs, tap_to_tap_is_one_queue_pair_unless_told) {
    Config c = pair_of(port("a", PortType::tap), port("b", PortType::tap));
    EXPECT_EQ(c.queue_pairs_of(c.ports[0]), 1);
    Config d = pair_of(port("a", PortType::tap, 3), port("b", PortType::tap));
    EXPECT_EQ(d.queue_pairs_of(d.ports[1]), 3);
}

TEST(ConfigQueuePairs, an_unconnected_discard_port_has_one_queue) {
    Config c;
    c.ports = {port("sink", PortType::null)};
    EXPECT_EQ(c.queue_pairs_of(c.ports[0]), 1);
}

TEST(ConfigQueuePairs, rejects_0_and_more_than_128_naming_the_port) {
    EXPECT_EQ(
        validation_error(pair_of(port("vm0", PortType::vhost_user, 0), port("t0", PortType::tap))),
        "port 'vm0': queue_pairs must be 1..128, not '0'");
    EXPECT_EQ(validation_error(
                  pair_of(port("vm0", PortType::vhost_user), port("t0", PortType::tap, 129))),
              "port 't0': queue_pairs must be 1..128, not '129'");
    EXPECT_EQ(validation_error(
                  pair_of(port("vm0", PortType::vhost_user, 128), port("t0", PortType::tap, 1))),
              "");
}

TEST(ConfigQueuePairs, placement_index_is_the_cross_connect) {
    Config c = pair_of(port("vm0", PortType::vhost_user), port("t0", PortType::tap));
    c.ports.push_back(port("vm1", PortType::vhost_user));
    c.ports.push_back(port("t1", PortType::tap));
    c.connections.emplace_back("vm1", "t1");
    EXPECT_EQ(c.connection_of("vm0"), 0u);
    EXPECT_EQ(c.connection_of("t1"), 1u);
    EXPECT_EQ(c.peer_of("t1")->name, "vm1");
    EXPECT_EQ(c.peer_of("nobody"), nullptr);
}

TEST(ConfigQueuePairs, the_config_file_key_is_read_and_validated) {
    char path[] = "/tmp/vnetd-qp-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << "[[port]]\nname = \"vm0\"\ntype = \"vhost-user\"\n"
                           "socket_path = \"/tmp/x.sock\"\nqueue_pairs = 300\n"
                           "[[port]]\nname = \"t0\"\ntype = \"tap\"\n"
                           "[[connect]]\nports = [\"vm0\", \"t0\"]\n";
    std::string error;
    try {
        load_config_file(path);
    } catch (const std::invalid_argument& e) {
        error = e.what();
    }
    EXPECT_EQ(error, std::string(path) + ": port 'vm0': queue_pairs must be 1..128, not '300'");
    std::ofstream(path) << "[[port]]\nname = \"vm0\"\ntype = \"vhost-user\"\n"
                           "socket_path = \"/tmp/x.sock\"\nqueue_pairs = 4\n"
                           "[[port]]\nname = \"t0\"\ntype = \"tap\"\n"
                           "[[connect]]\nports = [\"vm0\", \"t0\"]\n";
    Config c = load_config_file(path);
    ::unlink(path);
    EXPECT_EQ(c.queue_pairs_of(*c.find_port("t0")), 4);
}

}  // namespace
}  // namespace vnet::control
