#include <gtest/gtest.h>

#include "cni/cni_error.hpp"
#include "cni/net_config.hpp"

namespace vnet::cni {
namespace {

using nlohmann::json;

json tap_config() {
    return json::parse(R"({"cniVersion": "1.0.0", "name": "pods", "type": "vnetd-cni",
        "host": {"iftype": "tap", "bridge": {"bridgeName": "s0", "vlanId": 10}}})");
}

std::pair<int, std::string> error_of(const std::string& text, Verb verb = Verb::add) {
    try {
        parse_net_config(text, verb);
    } catch (const CniError& e) {
        return {static_cast<int>(e.code), e.what()};
    }
    return {0, ""};
}

std::pair<int, std::string> error_of(const json& j, Verb verb = Verb::add) {
    return error_of(j.dump(), verb);
}

TEST(NetConfig, reads_userspace_cni_keys) {
    json j = tap_config();
    j["host"]["iftype"] = "vhostuser";
    j["host"]["vhost"] = {{"mode", "client"}, {"socketfile", "net1.sock"}};
    j["runtimeConfig"] = {{"CNIDeviceInfoFile", "/var/run/k8s.cni.cncf.io/devinfo/x.json"}};
    j["ipam"] = {{"type", "host-local"}};
    const NetConfig c = parse_net_config(j.dump(), Verb::add);
    EXPECT_EQ(c.iftype, IfType::vhostuser);
    EXPECT_EQ(c.bridge, "s0");
    EXPECT_EQ(c.vlan, 10u);
    EXPECT_TRUE(c.vhost_client);
    EXPECT_EQ(c.socketfile, "net1.sock");
    EXPECT_EQ(c.device_info_file, "/var/run/k8s.cni.cncf.io/devinfo/x.json");
    EXPECT_EQ(c.control_socket, "/run/vnetd/vnetd.ctl");
    EXPECT_EQ(c.state_dir, "/var/lib/cni/vnetd");
    EXPECT_EQ(c.ipam["type"], "host-local");
}

TEST(NetConfig, takes_userspace_with_engine_vnetd) {
    json j = tap_config();
    j["type"] = "userspace";
    j["host"]["engine"] = "vnetd";
    EXPECT_EQ(error_of(j).first, 0);
    j["host"]["engine"] = "ovs-dpdk";
    EXPECT_EQ(error_of(j), std::make_pair(7, std::string("type must be vnetd-cni (or userspace "
                                                         "with host.engine vnetd), not 'userspace' "
                                                         "with host.engine 'ovs-dpdk'")));
}

TEST(NetConfig, rejects_what_is_not_json_with_code_6) {
    const auto [code, msg] = error_of(std::string("{nope"));
    EXPECT_EQ(code, 6);
    EXPECT_EQ(msg.rfind("failed to decode the network configuration: ", 0), 0u) << msg;
}

TEST(NetConfig, rejects_an_unknown_version_with_code_1) {
    json j = tap_config();
    j["cniVersion"] = "0.2.0";
    EXPECT_EQ(error_of(j),
              std::make_pair(1, std::string("incompatible CNI versions: config is "
                                            "\"0.2.0\", plugin supports "
                                            "[\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]")));
}

TEST(NetConfig, rejects_verbs_the_version_lacks) {
    json j = tap_config();
    j["cniVersion"] = "0.3.1";
    EXPECT_EQ(error_of(j, Verb::check),
              std::make_pair(1, std::string("config version 0.3.1 does not allow CHECK")));
    j["cniVersion"] = "1.0.0";
    EXPECT_EQ(error_of(j, Verb::gc),
              std::make_pair(1, std::string("config version 1.0.0 does not allow GC")));
    EXPECT_EQ(error_of(j, Verb::status),
              std::make_pair(1, std::string("config version 1.0.0 does not allow STATUS")));
}

TEST(NetConfig, names_the_key_that_is_wrong_with_code_7) {
    json j = tap_config();
    j["host"]["iftype"] = "macvlan";
    EXPECT_EQ(error_of(j),
              std::make_pair(7, std::string("unknown host.iftype 'macvlan' (vhostuser or tap)")));
    j = tap_config();
    j["host"]["bridge"].erase("bridgeName");
    EXPECT_EQ(error_of(j), std::make_pair(7, std::string("host.bridge.bridgeName (the vnetd "
                                                         "switch) is missing")));
    j = tap_config();
    j["host"]["bridge"]["vlanId"] = 4095;
    EXPECT_EQ(error_of(j), std::make_pair(7, std::string("host.bridge.vlanId must be an integer "
                                                         "from 1 to 4094")));
    j = tap_config();
    j["host"]["vhost"] = {{"mode", "both"}};
    EXPECT_EQ(
        error_of(j),
        std::make_pair(7, std::string("host.vhost.mode must be client or server, not 'both'")));
    j = tap_config();
    j.erase("name");
    EXPECT_EQ(error_of(j), std::make_pair(7, std::string("name is missing")));
    j = tap_config();
    j["ipam"] = json::object();
    EXPECT_EQ(error_of(j), std::make_pair(7, std::string("ipam.type is missing")));
}

TEST(NetConfig, gc_reads_the_valid_attachments_without_a_host_section) {
    json j = tap_config();
    j["cniVersion"] = "1.1.0";
    j.erase("host");
    j["cni.dev/valid-attachments"] = json::array({{{"containerID", "c1"}, {"ifname", "eth0"}}});
    const NetConfig c = parse_net_config(j.dump(), Verb::gc);
    ASSERT_EQ(c.valid_attachments.size(), 1u);
    EXPECT_EQ(c.valid_attachments[0], std::make_pair(std::string("c1"), std::string("eth0")));
}

}  // namespace
}  // namespace vnet::cni
