#include <gtest/gtest.h>

#include "cni/cni_error.hpp"
#include "cni/cni_result.hpp"
#include "cni/cni_version.hpp"

namespace vnet::cni {
namespace {

using nlohmann::json;

json sample() {
    json r = normalize_result(json::parse(R"({"cniVersion": "0.4.0",
        "ips": [{"version": "4", "address": "10.0.0.2/24", "gateway": "10.0.0.1"},
                {"version": "6", "address": "fd00::2/64"}],
        "routes": [{"dst": "0.0.0.0/0"}], "dns": {}})"));
    add_interface(r, {{"name", "net1"}, {"sandbox", "/run/netns/p"}, {"socketPath", "/s/net1"}});
    return r;
}

TEST(CniResult, normalizing_drops_the_ip_version_and_fills_the_lists) {
    const json r = normalize_result(json::object());
    EXPECT_EQ(r["interfaces"], json::array());
    EXPECT_EQ(r["ips"], json::array());
    EXPECT_FALSE(sample()["ips"][0].contains("version"));
}

TEST(CniResult, ips_point_at_the_interface_added) {
    const json r = sample();
    EXPECT_EQ(r["ips"][0]["interface"], 0);
    EXPECT_EQ(r["ips"][1]["interface"], 0);
}

TEST(CniResult, version_1_1_keeps_the_socket_path) {
    const json r = result_for_version(sample(), "1.1.0");
    EXPECT_EQ(r["cniVersion"], "1.1.0");
    EXPECT_EQ(r["interfaces"][0]["socketPath"], "/s/net1");
    EXPECT_FALSE(r["ips"][0].contains("version"));
}

TEST(CniResult, version_1_0_has_no_socket_path) {
    const json r = result_for_version(sample(), "1.0.0");
    EXPECT_FALSE(r["interfaces"][0].contains("socketPath"));
    EXPECT_FALSE(r["ips"][0].contains("version"));
}

TEST(CniResult, versions_before_1_0_carry_the_ip_version) {
    for (const char* v : {"0.3.1", "0.4.0"}) {
        const json r = result_for_version(sample(), v);
        EXPECT_EQ(r["cniVersion"], v);
        EXPECT_EQ(r["ips"][0]["version"], "4");
        EXPECT_EQ(r["ips"][1]["version"], "6");
        EXPECT_FALSE(r["interfaces"][0].contains("socketPath"));
    }
}

TEST(CniResult, refuses_a_0_2_0_result) {
    try {
        normalize_result(json::parse(R"({"ip4": {"ip": "10.0.0.2/24"}})"));
        FAIL() << "no error";
    } catch (const CniError& e) {
        EXPECT_EQ(e.code, ErrorCode::incompatible_version);
    }
}

TEST(CniResult, errors_print_as_the_spec_says) {
    EXPECT_EQ(error_json(CniError(ErrorCode::try_again_later, "m", "d"), "1.0.0"),
              json::parse(R"({"cniVersion":"1.0.0","code":11,"msg":"m","details":"d"})"));
    EXPECT_EQ(error_json(CniError(ErrorCode::invalid_config, "m"), ""),
              json::parse(R"({"cniVersion":"1.1.0","code":7,"msg":"m"})"));
}

TEST(CniVersion, advertises_the_four_versions) {
    EXPECT_EQ(version_json(), json::parse(R"({"cniVersion":"1.1.0",
        "supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]})"));
    EXPECT_LT(compare_versions("0.4.0", "1.0.0"), 0);
    EXPECT_EQ(compare_versions("1.1.0", "1.1.0"), 0);
    EXPECT_GT(compare_versions("1.10.0", "1.9.0"), 0);
}

}  // namespace
}  // namespace vnet::cni
