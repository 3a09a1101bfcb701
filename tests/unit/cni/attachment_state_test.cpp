#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "cni/attachment_state.hpp"

namespace vnet::cni {
namespace {

class StateStoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/vnet-cni-state.XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string dir_;
};

Attachment sample(const std::string& id, const std::string& ifname) {
    Attachment a;
    a.container_id = id;
    a.ifname = ifname;
    a.network = "pods";
    a.iftype = "vhostuser";
    a.port = port_name_for(id, ifname);
    a.socket_path = "/run/vnetd/cni/" + id + "/" + ifname;
    a.ipam = {{"type", "host-local"}};
    a.result = {{"ips", nlohmann::json::array()}};
    return a;
}

TEST_F(StateStoreTest, saves_and_loads_an_attachment_whole) {
    StateStore store(dir_ + "/sub");  // made on first save
    store.save(sample("c1", "net1"));
    const auto a = store.load("c1", "net1");
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(to_json(*a), to_json(sample("c1", "net1")));
    EXPECT_FALSE(std::filesystem::exists(store.file_for("c1", "net1") + ".tmp"));
}

TEST_F(StateStoreTest, lists_every_attachment_and_skips_broken_files) {
    StateStore store(dir_);
    store.save(sample("c1", "net1"));
    store.save(sample("c1.x", "net2"));
    std::FILE* f = std::fopen((dir_ + "/junk+eth0.json").c_str(), "w");
    std::fputs("{not json", f);
    std::fclose(f);
    auto all = store.list();
    ASSERT_EQ(all.size(), 2u);
    std::sort(all.begin(), all.end(), [](const Attachment& a, const Attachment& b) {
        return a.container_id < b.container_id;
    });
    EXPECT_EQ(all[0].container_id, "c1");
    EXPECT_EQ(all[1].container_id, "c1.x");
    EXPECT_EQ(all[1].ifname, "net2");
}

TEST_F(StateStoreTest, removing_twice_is_fine) {
    StateStore store(dir_);
    store.save(sample("c1", "net1"));
    store.remove("c1", "net1");
    store.remove("c1", "net1");
    EXPECT_FALSE(store.load("c1", "net1").has_value());
}

TEST(PortName, is_stable_short_and_per_attachment) {
    const std::string a = port_name_for("c1", "eth0");
    EXPECT_EQ(a.size(), 14u);
    EXPECT_EQ(a.rfind("vn", 0), 0u);
    EXPECT_EQ(a, port_name_for("c1", "eth0"));
    EXPECT_NE(a, port_name_for("c1", "eth1"));
    EXPECT_NE(a, port_name_for("c2", "eth0"));
}

}  // namespace
}  // namespace vnet::cni
