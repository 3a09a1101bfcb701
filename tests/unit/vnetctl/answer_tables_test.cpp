// vnetctl's tables: a port's switch membership in port list, and the
// worker table, from the JSON vnetd answers.
#include <gtest/gtest.h>

#include "answer_tables.hpp"
#include "membership_text.hpp"

namespace vnet::vnetctl {
namespace {

using nlohmann::json;

TEST(MembershipText, says_switch_vlan_trunk_and_macs) {
    EXPECT_EQ(membership_text(json{{"name", "t0"}}), "-");
    EXPECT_EQ(allowed_macs_text(json{{"name", "t0"}}), "-");
    const json access{
        {"switch", "s0"}, {"vlan", 10}, {"trunk", json::array()}, {"allowed_macs", json::array()}};
    EXPECT_EQ(membership_text(access), "s0 vlan 10");
    EXPECT_EQ(allowed_macs_text(access), "any");
    const json untagged{{"switch", "s0"},
                        {"vlan", nullptr},
                        {"trunk", json::array()},
                        {"allowed_macs", {"02:00:00:00:00:01", "02:00:00:00:00:02"}}};
    EXPECT_EQ(membership_text(untagged), "s0");
    EXPECT_EQ(allowed_macs_text(untagged), "02:00:00:00:00:01,02:00:00:00:00:02");
    EXPECT_EQ(membership_text(json{{"switch", "s1"}, {"vlan", nullptr}, {"trunk", {10, 20}}}),
              "s1 trunk 10,20");
    EXPECT_EQ(membership_text(json{{"switch", "s1"}, {"vlan", 5}, {"trunk", {10, 20}}}),
              "s1 trunk 10,20 native 5");
}

TEST(AnswerTables, port_list_has_the_switch_columns) {
    const json ports =
        json::array({json{{"name", "vm1"},
                          {"type", "vhost-user"},
                          {"socket_path", "/run/vnetd/vm1.sock"},
                          {"queue_pairs", 1},
                          {"switch", "s0"},
                          {"vlan", 10},
                          {"trunk", json::array()},
                          {"allowed_macs", {"02:00:00:00:00:01"}},
                          {"connections", 1}},
                     json{{"name", "t0"}, {"type", "tap"}, {"ifname", "t0"}, {"queue_pairs", 1}}});
    testing::internal::CaptureStdout();
    print_ports(ports);
    EXPECT_EQ(testing::internal::GetCapturedStdout(),
              "port  type        where                queue pairs  peer  switch      allowed macs "
              "      connections\n"
              "vm1   vhost-user  /run/vnetd/vm1.sock            1  -     s0 vlan 10  "
              "02:00:00:00:00:01            1\n"
              "t0    tap         t0                             1  -     -           -            "
              "      -\n");
}

TEST(AnswerTables, worker_list_has_queue_pairs_switches_and_busy_share) {
    const json workers = json::array(
        {json{{"worker", 0},
              {"cpu", 2},
              {"mode", "adaptive"},
              {"queue_pairs",
               {{{"port", "vm0"}, {"queue_pair", 0}}, {{"port", "vm1"}, {"queue_pair", 0}}}},
              {"switches", {"s0"}},
              {"busy_s", 1.25},
              {"idle_s", 3.75},
              {"busy_share", 0.25}},
         json{{"worker", 1},
              {"cpu", nullptr},
              {"mode", "poll"},
              {"queue_pairs", json::array()},
              {"switches", json::array()},
              {"busy_s", 0.0},
              {"idle_s", 0.0},
              {"busy_share", 0.0}}});
    testing::internal::CaptureStdout();
    print_workers(workers);
    EXPECT_EQ(testing::internal::GetCapturedStdout(),
              "worker  cpu  mode      queue pairs  switches  busy %  busy s  idle s\n"
              "     0    2  adaptive  vm0:0,vm1:0  s0          25.0   1.250   3.750\n"
              "     1  -    poll      -            -            0.0   0.000   0.000\n");
}

}  // namespace
}  // namespace vnet::vnetctl
