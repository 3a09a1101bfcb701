// The port factory: one entry per [[port]] type, and what the daemon needs
// of a built port without knowing its kind (capabilities, stats sections).
#include "control/ports/port_factory.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "control/metrics/stats_report.hpp"
#include "dataplane/forward_path.hpp"
#include "io/epoll_reactor.hpp"
#include "unit/dataplane/fake_ports.hpp"

namespace vnet::control {
namespace {

TEST(PortFactory, every_port_type_the_config_accepts_has_exactly_one_entry) {
    std::set<std::string> kinds;
    for (const PortFactoryEntry& entry : port_factories()) {
        EXPECT_TRUE(kinds.insert(std::string(entry.kind)).second) << entry.kind << " twice";
        EXPECT_NE(entry.build, nullptr) << entry.kind;
        // The entry's name is the type's spelling in a config file.
        auto type = parse_port_type(std::string(entry.kind));
        ASSERT_TRUE(type.has_value()) << entry.kind;
        EXPECT_EQ(to_string(*type), entry.kind);
    }
    for (PortType type : {PortType::vhost_user, PortType::tap, PortType::null, PortType::vxlan}) {
        const PortFactoryEntry* entry = find_port_factory(to_string(type));
        ASSERT_NE(entry, nullptr) << to_string(type);
        EXPECT_EQ(entry->kind, to_string(type));
    }
    EXPECT_EQ(find_port_factory("af-xdp"), nullptr);
}

// A discard port, built through its entry the way the daemon builds any.
struct BuiltNullPort {
    BuiltNullPort() {
        PortConfig pc;
        pc.name = "sink";
        pc.settings = NullSettings{};
        pc.queue_pairs = 3;
        config.ports = {pc};
        PortContext context{.config = config,
                            .log = log,
                            .reactor = reactor,
                            .control_queue = control_queue,
                            .run_on_owner = {}};
        built = find_port_factory("null")->build(config.ports[0], context);
    }
    Config config;
    Logger log = make_logger("test");
    io::EpollReactor reactor;
    ControlQueue control_queue{reactor};
    BuiltPort built;
};

TEST(PortFactory, the_null_entry_builds_a_sink_with_its_queue_pairs_and_no_service) {
    BuiltNullPort n;
    ASSERT_NE(n.built.port, nullptr);
    EXPECT_EQ(n.built.port->name(), "sink");
    EXPECT_EQ(n.built.port->queue_count(), 3);
    EXPECT_EQ(n.built.service, nullptr);
    ports::QueuePairCapabilities caps = n.built.port->capabilities(2);
    EXPECT_NE(caps.burst_sink, nullptr);
    EXPECT_NE(caps.buffer_lender, nullptr);
    // It produces nothing: no path leaves it, whatever it feeds.
    EXPECT_EQ(caps.burst_source, nullptr);
    EXPECT_EQ(caps.reader, nullptr);
    EXPECT_FALSE(dataplane::ForwardPath::style_between(caps, caps).has_value());
}

TEST(PortFactory, stats_name_the_kind_the_factory_gave_and_a_port_without_facts_has_no_sections) {
    BuiltNullPort n;
    nlohmann::json j = port_stats_json(*n.built.port, "null");
    EXPECT_EQ(j["kind"], "null");
    EXPECT_EQ(j["queues"].size(), 3u);
    EXPECT_FALSE(j.contains("tap"));
    EXPECT_FALSE(j.contains("xdp"));
}

// A port of a kind stats_report has never heard of, telling about itself.
class DescribedSink : public dataplane::testing::FakeSink {
public:
    void describe(std::vector<Fact>& out) const override {
        out.push_back({"tunnel", "remote", std::string("192.0.2.1")});
        out.push_back({"tunnel", "vni", uint64_t{42}});
        out.push_back({"tunnel", "learning", true});
    }
};

TEST(PortFactory, stats_show_each_section_a_port_describes_with_its_values_types) {
    DescribedSink port;
    nlohmann::json j = port_stats_json(port, "vxlan");
    EXPECT_EQ(j["kind"], "vxlan");
    ASSERT_TRUE(j.contains("tunnel"));
    EXPECT_EQ(j["tunnel"]["remote"], "192.0.2.1");
    EXPECT_EQ(j["tunnel"]["vni"], 42);
    EXPECT_EQ(j["tunnel"]["learning"], true);
    EXPECT_TRUE(j["tunnel"]["learning"].is_boolean());
}

}  // namespace
}  // namespace vnet::control
