// Feature words decoded for vnetctl show: the spec's names, lowest bit
// first, and a bit without a name still shown, by number.
#include <gtest/gtest.h>

#include "vhost_user/message.hpp"
#include "vhost_user/protocol_feature_names.hpp"
#include "virtio/feature_names.hpp"

namespace vnet::virtio {
namespace {

TEST(FeatureNames, names_every_feature_bit_vnetd_knows_by_its_spec_macro) {
    EXPECT_EQ(feature_name(0), "VIRTIO_NET_F_CSUM");
    EXPECT_EQ(feature_name(15), "VIRTIO_NET_F_MRG_RXBUF");
    EXPECT_EQ(feature_name(29), "VIRTIO_RING_F_EVENT_IDX");
    EXPECT_EQ(feature_name(30), "VHOST_USER_F_PROTOCOL_FEATURES");
    EXPECT_EQ(feature_name(32), "VIRTIO_F_VERSION_1");
    EXPECT_EQ(feature_name(34), "VIRTIO_F_RING_PACKED");
    EXPECT_EQ(feature_name(56), "VIRTIO_NET_F_HOST_USO");
}

TEST(FeatureNames, a_bit_without_a_name_has_an_empty_name) {
    EXPECT_EQ(feature_name(4), "");  // reserved in virtio 1.2 §5.1.3
    EXPECT_EQ(feature_name(63), "");
    EXPECT_EQ(feature_name(64), "");
    EXPECT_EQ(feature_name(1000), "");
}

TEST(FeatureNames, a_word_decodes_lowest_bit_first_with_unnamed_bits_by_number) {
    const FeatureSet f{Feature::version_1, Feature::net_mrg_rxbuf, Feature::ring_event_idx};
    EXPECT_EQ(feature_names(f),
              (std::vector<std::string>{"VIRTIO_NET_F_MRG_RXBUF", "VIRTIO_RING_F_EVENT_IDX",
                                        "VIRTIO_F_VERSION_1"}));
    EXPECT_EQ(feature_names(FeatureSet(uint64_t{1} << 4 | uint64_t{1} << 63 | 1)),
              (std::vector<std::string>{"VIRTIO_NET_F_CSUM", "bit 4", "bit 63"}));
    EXPECT_TRUE(feature_names(FeatureSet{}).empty());
}

TEST(FeatureNames, protocol_features_decode_with_vhost_user_names) {
    const vhost_user::ProtocolFeatureSet p{vhost_user::ProtocolFeature::mq,
                                           vhost_user::ProtocolFeature::reply_ack,
                                           vhost_user::ProtocolFeature::status};
    EXPECT_EQ(
        bit_names(p.bits(), vhost_user::protocol_feature_name),
        (std::vector<std::string>{"VHOST_USER_PROTOCOL_F_MQ", "VHOST_USER_PROTOCOL_F_REPLY_ACK",
                                  "VHOST_USER_PROTOCOL_F_STATUS"}));
    EXPECT_EQ(bit_names(uint64_t{1} << 40, vhost_user::protocol_feature_name),
              (std::vector<std::string>{"bit 40"}));
}

}  // namespace
}  // namespace vnet::virtio
