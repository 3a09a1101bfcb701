// AuditedControl: each change made through the control socket is logged
// once, in words, with the client's uid; queries and refused changes are
// not logged.
#include "control/rpc/audited_control.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "control/lifecycle/reload_summary.hpp"
#include "control/rpc/caller.hpp"
#include "unit/control/recording_control_api.hpp"

namespace vnet::control {
namespace {

using nlohmann::json;

class AuditedControlTest : public ::testing::Test {
protected:
    AuditedControlTest() {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(lines_);
        auto log = std::make_shared<spdlog::logger>("audit-test", sink);
        log->set_pattern("%v");
        log->set_level(spdlog::level::info);
        audited_ = std::make_unique<AuditedControl>(recording_.parts(), log);
    }
    // What was logged since the last call.
    std::string logged() {
        std::string out = lines_.str();
        lines_.str("");
        return out;
    }

    std::ostringstream lines_;
    RecordingControlApi recording_;
    std::unique_ptr<AuditedControl> audited_;
    rpc::CallerScope caller_{rpc::Caller{1000, 4242}};
};

TEST_F(AuditedControlTest, each_change_is_one_line_in_words_with_the_uid) {
    audited_->add_port("vm1", "vhost-user", "",
                       {{"socket_path", "/run/vnetd/vm1.sock"}, {"switch", "s0"}, {"vlan", "10"}});
    EXPECT_EQ(logged(),
              "control: uid 1000 added port vm1 (vhost-user, switch s0, vlan 10, socket_path "
              "/run/vnetd/vm1.sock)\n");
    audited_->add_port("t1", "tap", "vm0", {});
    EXPECT_EQ(logged(), "control: uid 1000 added port t1 (tap, peer vm0)\n");
    audited_->remove_port("vm1");
    EXPECT_EQ(logged(), "control: uid 1000 removed port vm1\n");
    audited_->add_switch("s1", {{"mac_aging_s", "60"}});
    EXPECT_EQ(logged(), "control: uid 1000 added switch s1 (mac_aging_s 60)\n");
    audited_->remove_switch("s1");
    EXPECT_EQ(logged(), "control: uid 1000 removed switch s1\n");
    audited_->change_uplink_peer("s0", "10.0.0.2", true);
    EXPECT_EQ(logged(), "control: uid 1000 added vxlan peer 10.0.0.2 to switch s0\n");
    audited_->change_uplink_peer("s0", "10.0.0.2", false);
    EXPECT_EQ(logged(), "control: uid 1000 removed vxlan peer 10.0.0.2 from switch s0\n");
    audited_->flush_macs(std::string("s0"), std::nullopt);
    EXPECT_EQ(logged(), "control: uid 1000 flushed 3 learned MAC(s) of switch s0\n");
    audited_->log_level(std::string("debug"));
    EXPECT_EQ(logged(), "control: uid 1000 set the log level to debug (was info)\n");
    audited_->reload();
    EXPECT_EQ(logged(), "control: uid 1000 reloaded the config: nothing changed\n");
    audited_->upgrade("/usr/sbin/vnetd");
    EXPECT_EQ(logged(), "control: uid 1000 asked for an upgrade in place to /usr/sbin/vnetd\n");
    // Each passed on, once.
    EXPECT_EQ(recording_.calls.size(), 12u);  // log_level asks for the old level first
}

TEST_F(AuditedControlTest, queries_are_not_logged) {
    audited_->stats();
    audited_->list_ports();
    audited_->show_ports(std::nullopt);
    audited_->list_switches(std::nullopt);
    audited_->list_macs(std::nullopt);
    audited_->list_workers();
    audited_->log_level(std::nullopt);
    EXPECT_EQ(logged(), "");
    EXPECT_EQ(recording_.calls.size(), 7u);
}

TEST_F(AuditedControlTest, a_refused_change_is_not_logged) {
    // The recording API parses settings as the daemon does: a bad one throws.
    EXPECT_THROW(audited_->add_port("vm1", "vhost-user", "", {{"queue_pairs", "many"}}),
                 std::invalid_argument);
    EXPECT_EQ(logged(), "");
}

TEST_F(AuditedControlTest, the_uid_is_the_current_callers) {
    {
        const rpc::CallerScope root(rpc::Caller{0, 1});
        audited_->remove_port("a");
    }
    audited_->remove_port("b");
    EXPECT_EQ(logged(),
              "control: uid 0 removed port a\n"
              "control: uid 1000 removed port b\n");
}

TEST(ReloadSummary, says_what_a_reload_did_in_words) {
    EXPECT_EQ(reload_summary(json{{"removed", json::array()},
                                  {"added", json::array()},
                                  {"switches_removed", json::array()},
                                  {"switches_added", json::array()},
                                  {"options", json::object()}}),
              "nothing changed");
    EXPECT_EQ(reload_summary(json{{"removed", {"vm2"}},
                                  {"added", {"vm3", "vm4"}},
                                  {"switches_removed", json::array()},
                                  {"switches_added", {"s1"}},
                                  {"options", {{"stats_interval_s", "5"}}}}),
              "removed port vm2; added switch s1; added ports vm3, vm4; options "
              "stats_interval_s=5");
}

}  // namespace
}  // namespace vnet::control
