// GET_CONFIG: how a front end reads the MTU vnetd offers (virtio 1.2 §5.1.4
// virtio_net_config.mtu behind VIRTIO_NET_F_MTU). Offered only with an MTU;
// every range is checked before a byte is copied.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "packet/byte_order.hpp"
#include "unit/vhost_user/device_harness.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::RequestBuilder;

// A GET_CONFIG request for `size` bytes from `offset` (the payload is the
// header and `size` bytes the back end overwrites).
struct ConfigRead {
    DeviceConfigHeader header;
    std::array<uint8_t, kMaxConfigSize> bytes;
};

RequestBuilder get_config(uint32_t offset, uint32_t size) {
    ConfigRead read{{offset, size, 0}, {}};
    RequestBuilder r(Request::get_config);
    r.payload(read);
    r.size(static_cast<uint32_t>(sizeof(DeviceConfigHeader)) + size);
    return r;
}

DeviceConfig jumbo_config() {
    DeviceConfig c = test::test_device_config(4);
    c.mtu = 9000;
    return c;
}

uint64_t with_config(const DeviceHarness& h) {
    return h.device->offered_protocol_features().bits();
}

TEST(VhostUserConfigSpace, is_offered_with_an_mtu_only) {
    DeviceHarness plain;
    EXPECT_FALSE(plain.device->offered_protocol_features().has(ProtocolFeature::config));
    DeviceHarness jumbo(jumbo_config());
    EXPECT_TRUE(jumbo.device->offered_protocol_features().has(ProtocolFeature::config));
}

TEST(VhostUserConfigSpace, gives_the_mtu_queue_pairs_and_link_status) {
    DeviceHarness h(jumbo_config());
    h.negotiate(with_config(h));
    auto r = h.send(get_config(0, 12));
    ASSERT_EQ(r.result.error, MessageError::ok);
    ASSERT_TRUE(r.result.has_reply);
    ASSERT_EQ(r.msg->size(), sizeof(DeviceConfigHeader) + 12);
    DeviceConfigHeader echoed;
    std::memcpy(&echoed, r.msg->payload.data(), sizeof echoed);
    EXPECT_EQ(echoed.offset, 0u);
    EXPECT_EQ(echoed.size, 12u);
    const uint8_t* space = r.msg->payload.data() + sizeof(DeviceConfigHeader);
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(space[i], 0) << "no MAC of our own, byte " << i;
    }
    EXPECT_EQ(packet::load_le16(space + kNetConfigStatusOffset), kNetStatusLinkUp);
    EXPECT_EQ(packet::load_le16(space + kNetConfigMaxQueuePairsOffset), 4);
    EXPECT_EQ(packet::load_le16(space + kNetConfigMtuOffset), 9000);
}

TEST(VhostUserConfigSpace, reads_a_field_alone_as_virtio_user_does) {
    DeviceHarness h(jumbo_config());
    h.negotiate(with_config(h));
    auto r = h.send(get_config(kNetConfigMtuOffset, 2));
    ASSERT_EQ(r.result.error, MessageError::ok);
    ASSERT_EQ(r.msg->size(), sizeof(DeviceConfigHeader) + 2);
    EXPECT_EQ(packet::load_le16(r.msg->payload.data() + sizeof(DeviceConfigHeader)), 9000);
}

// vhost-user.rst GET_CONFIG: "vhost-user back-end uses zero length of
// payload to indicate an error" (libvhost-user and DPDK reply with
// header.size 0): the front end is told no, and the connection goes on.
void expect_zero_length_refusal(DeviceHarness& h, const test::Reply& r) {
    EXPECT_EQ(r.result.error, MessageError::config_range_invalid);
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.msg->header.request, static_cast<uint32_t>(Request::get_config));
    EXPECT_EQ(r.msg->header.flags, 0x5u);
    EXPECT_EQ(r.msg->header.size, 0u);
    EXPECT_FALSE(r.result.disconnect);
    EXPECT_FALSE(h.device->is_broken());
    // The next message is answered.
    auto next = h.send(get_config(kNetConfigMtuOffset, 2));
    EXPECT_EQ(next.result.error, MessageError::ok);
    ASSERT_EQ(next.msg->header.size, sizeof(DeviceConfigHeader) + 2);
    EXPECT_EQ(packet::load_le16(next.msg->payload.data() + sizeof(DeviceConfigHeader)), 9000);
}

TEST(VhostUserConfigSpace, answers_a_range_past_the_config_space_with_a_zero_length_reply) {
    DeviceHarness h(jumbo_config());
    h.negotiate(with_config(h));
    expect_zero_length_refusal(h, h.send(get_config(kMaxConfigSize - 1, 2)));
}

TEST(VhostUserConfigSpace, answers_a_size_past_256_bytes_with_a_zero_length_reply) {
    DeviceHarness h(jumbo_config());
    h.negotiate(with_config(h));
    // The payload carries the 300 bytes, as a front end asking for them sends it.
    std::array<uint8_t, sizeof(DeviceConfigHeader) + 300> request{};
    const DeviceConfigHeader header{0, 300, 0};
    std::memcpy(request.data(), &header, sizeof header);
    expect_zero_length_refusal(h, h.send(RequestBuilder(Request::get_config).payload(request)));
}

TEST(VhostUserConfigSpace, answers_a_size_that_wraps_the_offset_with_a_zero_length_reply) {
    DeviceHarness h(jumbo_config());
    h.negotiate(with_config(h));
    expect_zero_length_refusal(h,
                               h.send(get_config(0xffffffffu, 0).size(sizeof(DeviceConfigHeader))));
}

TEST(VhostUserConfigSpace, refuses_a_payload_shorter_than_its_header_says) {
    DeviceHarness h(jumbo_config());
    h.negotiate(with_config(h));
    auto r = h.send(get_config(0, 12).size(sizeof(DeviceConfigHeader) + 4));
    EXPECT_EQ(r.result.error, MessageError::payload_size_mismatch);
}

TEST(VhostUserConfigSpace, is_refused_unless_negotiated) {
    DeviceHarness h(jumbo_config());
    h.negotiate();
    auto r = h.send(get_config(kNetConfigMtuOffset, 2));
    EXPECT_EQ(r.result.error, MessageError::protocol_feature_not_negotiated);
}

}  // namespace
}  // namespace vnet::vhost_user
