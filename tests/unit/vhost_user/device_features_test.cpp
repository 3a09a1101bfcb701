// Per-device settings: features, protocol features, status, MTU, RARP.
#include <gtest/gtest.h>

#include "unit/vhost_user/device_harness.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::kNeedReply;
using test::RequestBuilder;
using virtio::Feature;

TEST(VhostUserFeatures, offers_tap_offloads_protocol_features_packed_and_log_all) {
    DeviceHarness h;
    auto r = h.send(RequestBuilder(Request::get_features));
    const virtio::FeatureSet offered(r.u64());
    for (Feature f :
         {Feature::version_1, Feature::net_mrg_rxbuf, Feature::net_csum, Feature::net_guest_csum,
          Feature::net_host_tso4, Feature::net_guest_tso6, Feature::ring_event_idx,
          Feature::ring_indirect_desc, Feature::vhost_user_protocol_features, Feature::net_mq,
          Feature::ring_packed, Feature::vhost_log_all}) {
        EXPECT_TRUE(offered.has(f)) << static_cast<int>(f);
    }
    for (Feature f : {Feature::access_platform, Feature::net_mtu, Feature::net_ctrl_vq}) {
        EXPECT_FALSE(offered.has(f)) << static_cast<int>(f);
    }
}

TEST(VhostUserFeatures, offers_mtu_only_when_configured_and_mq_only_with_several_pairs) {
    DeviceConfig c = test::test_device_config(1);
    c.mtu = 9000;
    DeviceHarness h(c);
    EXPECT_TRUE(h.device->offered_features().has(Feature::net_mtu));
    EXPECT_FALSE(h.device->offered_features().has(Feature::net_mq));
}

TEST(VhostUserFeatures, configuration_cannot_offer_what_we_do_not_implement) {
    DeviceConfig c = test::test_device_config();
    c.features = virtio::FeatureSet{Feature::access_platform, Feature::version_1};
    c.protocol_features = ProtocolFeatureSet{ProtocolFeature::pagefault, ProtocolFeature::mq};
    DeviceHarness h(c);
    EXPECT_FALSE(h.device->offered_features().has(Feature::access_platform));
    EXPECT_TRUE(h.device->offered_features().has(Feature::version_1));
    EXPECT_EQ(h.device->offered_protocol_features(), ProtocolFeatureSet{ProtocolFeature::mq});
}

TEST(VhostUserFeatures, get_protocol_features_works_before_set_features) {
    DeviceHarness h;
    auto r = h.send(RequestBuilder(Request::get_protocol_features));
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.u64(), kDefaultProtocolFeatures.bits());
    const ProtocolFeatureSet p(r.u64());
    EXPECT_TRUE(p.has(ProtocolFeature::reply_ack));
    EXPECT_TRUE(p.has(ProtocolFeature::log_shmfd));
    EXPECT_TRUE(p.has(ProtocolFeature::inflight_shmfd));
    EXPECT_FALSE(p.has(ProtocolFeature::pagefault));
}

TEST(VhostUserFeatures, rejects_features_not_offered) {
    DeviceHarness h;
    h.negotiate();
    const auto before = h.device->negotiated_features();
    auto r = h.send(RequestBuilder(Request::set_features, kNeedReply)
                        .payload(virtio::FeatureSet::mask(Feature::access_platform)));
    EXPECT_EQ(r.result.error, MessageError::features_not_offered);
    EXPECT_EQ(r.u64(), 1u);
    EXPECT_EQ(h.device->negotiated_features(), before);
}

TEST(VhostUserFeatures, rejects_protocol_features_not_offered) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_protocol_features, kNeedReply)
                        .payload(ProtocolFeatureSet::mask(ProtocolFeature::pagefault)));
    EXPECT_EQ(r.result.error, MessageError::protocol_features_not_offered);
    EXPECT_EQ(h.device->negotiated_protocol_features(), kDefaultProtocolFeatures);
}

TEST(VhostUserFeatures, set_features_repeated_per_queue_pair_is_accepted_while_running) {
    DeviceHarness h;
    test::GuestMemory mem;
    h.negotiate();
    h.set_mem_table(mem);
    h.start_ring(mem, 0);
    ASSERT_TRUE(h.device->queue_ready(0));
    auto r = h.send(RequestBuilder(Request::set_features, kNeedReply)
                        .payload(h.device->negotiated_features().bits()));
    EXPECT_EQ(r.result.error, MessageError::ok);
    EXPECT_TRUE(h.device->queue_ready(0));
}

TEST(VhostUserFeatures, refuses_feature_change_while_a_ring_runs) {
    DeviceHarness h;
    test::GuestMemory mem;
    h.negotiate();
    h.set_mem_table(mem);
    h.start_ring(mem, 0);
    auto r = h.send(
        RequestBuilder(Request::set_features, kNeedReply)
            .payload(h.device->negotiated_features().without(Feature::net_mrg_rxbuf).bits()));
    EXPECT_EQ(r.result.error, MessageError::features_changed_while_running);
    EXPECT_TRUE(h.device->negotiated_features().has(Feature::net_mrg_rxbuf));
}

TEST(VhostUserFeatures, get_queue_num_reports_queue_pairs) {
    DeviceHarness h(test::test_device_config(4));
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::get_queue_num));
    EXPECT_EQ(r.msg->header.size, 8u);
    EXPECT_EQ(r.u64(), 4u);
}

TEST(VhostUserFeatures, get_max_mem_slots_reports_509) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::get_max_mem_slots));
    EXPECT_EQ(r.msg->header.flags, 0x5u);
    EXPECT_EQ(r.u64(), 509u);
}

TEST(VhostUserFeatures, status_set_then_get_round_trips) {
    DeviceHarness h;
    h.negotiate();
    EXPECT_EQ(h.send(RequestBuilder(Request::set_status, kNeedReply).payload(uint64_t{0xf})).u64(),
              0u);
    auto r = h.send(RequestBuilder(Request::get_status));
    EXPECT_EQ(r.msg->header.size, 8u);
    EXPECT_EQ(r.u64(), 0xfu);
}

TEST(VhostUserFeatures, rejects_status_above_255) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_status, kNeedReply).payload(uint64_t{0x100}));
    EXPECT_EQ(r.result.error, MessageError::status_out_of_range);
    EXPECT_EQ(h.device->status(), 0u);
}

TEST(VhostUserFeatures, net_set_mtu_stores_a_valid_mtu) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::net_set_mtu, kNeedReply).payload(uint64_t{1500}));
    EXPECT_EQ(r.u64(), 0u);
    EXPECT_EQ(h.device->mtu(), 1500);
}

TEST(VhostUserFeatures, rejects_mtu_below_68) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::net_set_mtu, kNeedReply).payload(uint64_t{67}));
    EXPECT_EQ(r.result.error, MessageError::mtu_out_of_range);
    EXPECT_NE(r.u64(), 0u);
    EXPECT_FALSE(h.device->mtu().has_value());
}

TEST(VhostUserFeatures, send_rarp_stores_the_mac_and_tells_the_dataplane) {
    DeviceHarness h;
    h.negotiate();
    uint64_t payload = 0;
    const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
    std::memcpy(&payload, mac, 6);
    h.send(RequestBuilder(Request::send_rarp, kNeedReply).payload(payload));
    ASSERT_TRUE(h.device->rarp_mac().has_value());
    EXPECT_EQ(std::memcmp(h.device->rarp_mac()->data(), mac, 6), 0);
    EXPECT_EQ(h.observer.count(test::ObserverEvent::rarp), 1u);
}

TEST(VhostUserFeatures, set_backend_req_fd_is_refused_because_backend_req_is_not_offered) {
    DeviceHarness h;
    h.negotiate();
    auto [a, b] = test::make_socket_pair();
    auto r = h.send(RequestBuilder(Request::set_backend_req_fd, kNeedReply).fd(a.get()));
    EXPECT_EQ(r.result.error, MessageError::protocol_feature_not_negotiated);
}

}  // namespace
}  // namespace vnet::vhost_user
