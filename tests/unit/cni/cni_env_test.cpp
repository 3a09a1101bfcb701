#include <gtest/gtest.h>

#include <map>

#include "cni/cni_env.hpp"
#include "cni/cni_error.hpp"

namespace vnet::cni {
namespace {

EnvLookup lookup_in(std::map<std::string, std::string> vars) {
    return [vars](const std::string& name) -> std::optional<std::string> {
        auto it = vars.find(name);
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
}

// The code and message read_env throws for these variables.
std::pair<int, std::string> error_of(std::map<std::string, std::string> vars) {
    try {
        read_env(lookup_in(std::move(vars)));
    } catch (const CniError& e) {
        return {static_cast<int>(e.code), e.what()};
    }
    return {0, ""};
}

TEST(CniEnv, reads_every_variable_of_an_add) {
    const CniEnv env = read_env(lookup_in({{"CNI_COMMAND", "ADD"},
                                           {"CNI_CONTAINERID", "abc-1.2_x"},
                                           {"CNI_NETNS", "/run/netns/p"},
                                           {"CNI_IFNAME", "eth0"},
                                           {"CNI_ARGS", "K=V"},
                                           {"CNI_PATH", "/opt/cni/bin::/usr/lib/cni"}}));
    EXPECT_EQ(env.verb, Verb::add);
    EXPECT_EQ(env.container_id, "abc-1.2_x");
    EXPECT_EQ(env.netns, "/run/netns/p");
    EXPECT_EQ(env.ifname, "eth0");
    EXPECT_EQ(env.args, "K=V");
    EXPECT_EQ(env.path, (std::vector<std::string>{"/opt/cni/bin", "/usr/lib/cni"}));
}

TEST(CniEnv, rejects_a_missing_command_with_code_4) {
    EXPECT_EQ(error_of({}),
              std::make_pair(4, std::string("required env variables [CNI_COMMAND] missing")));
}

TEST(CniEnv, rejects_an_unknown_command_with_code_4) {
    EXPECT_EQ(error_of({{"CNI_COMMAND", "FROB"}}),
              std::make_pair(4, std::string("unknown CNI_COMMAND: FROB")));
}

TEST(CniEnv, names_every_variable_add_misses) {
    EXPECT_EQ(error_of({{"CNI_COMMAND", "ADD"}}),
              std::make_pair(4, std::string("required env variables "
                                            "[CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing")));
}

TEST(CniEnv, del_does_not_need_a_netns) {
    const CniEnv env = read_env(
        lookup_in({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "c1"}, {"CNI_IFNAME", "eth0"}}));
    EXPECT_EQ(env.verb, Verb::del);
    EXPECT_TRUE(env.netns.empty());
}

TEST(CniEnv, gc_needs_cni_path) {
    EXPECT_EQ(error_of({{"CNI_COMMAND", "GC"}}),
              std::make_pair(4, std::string("required env variables [CNI_PATH] missing")));
}

TEST(CniEnv, version_and_status_need_only_the_command) {
    EXPECT_EQ(read_env(lookup_in({{"CNI_COMMAND", "VERSION"}})).verb, Verb::version);
    EXPECT_EQ(read_env(lookup_in({{"CNI_COMMAND", "STATUS"}})).verb, Verb::status);
}

TEST(CniEnv, rejects_a_container_id_that_starts_with_a_dash) {
    EXPECT_EQ(error_of({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "-x"}, {"CNI_IFNAME", "eth0"}}),
              std::make_pair(4, std::string("invalid characters in containerID")));
}

TEST(CniEnv, rejects_interface_names_linux_refuses) {
    const auto with_ifname = [](const std::string& ifname) {
        return error_of({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "c"}, {"CNI_IFNAME", ifname}});
    };
    EXPECT_EQ(with_ifname("a23456789012345x"),
              std::make_pair(4, std::string("interface name is too long")));
    EXPECT_EQ(with_ifname(".."), std::make_pair(4, std::string("interface name is . or ..")));
    EXPECT_EQ(
        with_ifname("a/b"),
        std::make_pair(4, std::string("interface name contains / or : or whitespace characters")));
    EXPECT_EQ(with_ifname("a23456789012345").first, 0);
}

}  // namespace
}  // namespace vnet::cni
