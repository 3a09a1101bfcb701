// TapDevice option checks that run before any system call, so they need no
// privileges. Opening real taps is covered by
// tests/integration/test_tap_device.sh (root).
#include "ports/tap/tap_device.hpp"

#include <gtest/gtest.h>

#include <string>

#include "ports/setup_error.hpp"

namespace vnet::ports {
namespace {

std::string setup_error_of(const TapOptions& options) {
    try {
        TapDevice tap(options);
    } catch (const PortSetupError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(TapOptions, defaults_suit_the_datapath) {
    TapOptions options;
    EXPECT_EQ(options.vnet_header_size, 12u);  // virtio_net_hdr_v1, VERSION_1
    EXPECT_FALSE(options.napi);                // measured slower for one-packet writes
    EXPECT_FALSE(options.napi_frags);
    EXPECT_FALSE(options.multi_queue);
    EXPECT_FALSE(options.persist);  // a created tap goes away with its fd
    EXPECT_TRUE(options.link_up);
    EXPECT_FALSE(options.mtu.has_value());
    EXPECT_FALSE(options.txqueuelen.has_value());
}

TEST(TapDevice, rejects_a_name_longer_than_ifnamsiz_naming_it) {
    TapOptions options;
    options.name = "a-name-far-too-long-for-linux";
    const std::string message = setup_error_of(options);
    EXPECT_NE(message.find("a-name-far-too-long-for-linux"), std::string::npos) << message;
    EXPECT_NE(message.find("at most 15"), std::string::npos) << message;
}

TEST(TapDevice, rejects_napi_frags_without_napi) {
    TapOptions options;
    options.name = "vt-test";
    options.napi_frags = true;
    const std::string message = setup_error_of(options);
    EXPECT_NE(message.find("napi_frags needs napi"), std::string::npos) << message;
}

TEST(TapDevice, rejects_a_vnet_header_shorter_than_virtio_net_hdr) {
    TapOptions options;
    options.name = "vt-test";
    options.vnet_header_size = 8;
    const std::string message = setup_error_of(options);
    EXPECT_NE(message.find("vnet_header_size 8"), std::string::npos) << message;
}

TEST(PortSetupError, message_names_device_step_errno_and_a_hint) {
    std::string message;
    int error_number = 0;
    try {
        throw_setup_error("tap 'vt1'", "TUNSETIFF", EPERM);
    } catch (const PortSetupError& e) {
        message = e.what();
        error_number = e.error_number();
    }
    EXPECT_EQ(error_number, EPERM);
    EXPECT_NE(message.find("tap 'vt1': TUNSETIFF failed"), std::string::npos) << message;
    EXPECT_NE(message.find("(EPERM)"), std::string::npos) << message;
    EXPECT_NE(message.find("CAP_NET_ADMIN"), std::string::npos) << message;
}

}  // namespace
}  // namespace vnet::ports
