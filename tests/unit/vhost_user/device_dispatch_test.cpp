// The dispatcher: table rules (size, fds, features) and the reply policy.
#include <gtest/gtest.h>
#include <unistd.h>

#include "unit/vhost_user/device_harness.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::kNeedReply;
using test::RequestBuilder;

TEST(VhostUserDispatch, every_request_id_has_its_own_table_entry) {
    for (uint32_t id = 0; id < kRequestCount; ++id) {
        const RequestSpec* spec = find_request_spec(id);
        ASSERT_NE(spec, nullptr);
        EXPECT_EQ(static_cast<uint32_t>(spec->request), id);
        EXPECT_STREQ(spec->name, to_string(spec->request));
    }
    EXPECT_EQ(find_request_spec(kRequestCount), nullptr);
}

TEST(VhostUserDispatch, only_unsupported_requests_skip_the_payload_size_check) {
    for (uint32_t id = 0; id < kRequestCount; ++id) {
        const RequestSpec* spec = find_request_spec(id);
        EXPECT_EQ(spec->handler == nullptr, spec->payload_rule == PayloadRule::unchecked)
            << spec->name;
    }
}

TEST(VhostUserDispatch, reply_flags_are_exactly_0x5_and_size_is_exact) {
    DeviceHarness h;
    auto r = h.send(RequestBuilder(Request::get_features));
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.msg->header.flags, 0x5u);
    EXPECT_EQ(r.msg->header.request, static_cast<uint32_t>(Request::get_features));
    EXPECT_EQ(r.msg->header.size, 8u);
}

TEST(VhostUserDispatch, need_reply_with_reply_ack_gets_u64_zero) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_owner, kNeedReply));
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.msg->header.flags, 0x5u);
    EXPECT_EQ(r.msg->header.request, static_cast<uint32_t>(Request::set_owner));
    EXPECT_EQ(r.msg->header.size, 8u);
    EXPECT_EQ(r.u64(), 0u);
}

TEST(VhostUserDispatch, need_reply_without_reply_ack_negotiated_gets_no_reply) {
    DeviceHarness h;
    auto r = h.send(RequestBuilder(Request::set_owner, kNeedReply));
    EXPECT_EQ(r.result.error, MessageError::ok);
    EXPECT_FALSE(r.result.has_reply);
}

TEST(VhostUserDispatch, request_with_its_own_reply_is_not_acked_as_well) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::get_features, kNeedReply));
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.u64(), h.device->offered_features().bits());
}

TEST(VhostUserDispatch,
     refusal_with_need_reply_and_reply_ack_gets_nonzero_and_device_stays_usable) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_vring_num, kNeedReply).payload(VringState{0, 3}));
    EXPECT_EQ(r.result.error, MessageError::vring_num_invalid);
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_NE(r.u64(), 0u);
    EXPECT_FALSE(r.result.disconnect);
    EXPECT_FALSE(h.device->is_broken());
}

TEST(VhostUserDispatch, refusal_the_front_end_cannot_be_told_about_breaks_the_device) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_vring_num).payload(VringState{0, 3}));
    EXPECT_EQ(r.result.error, MessageError::vring_num_invalid);
    EXPECT_FALSE(r.result.has_reply);
    EXPECT_TRUE(r.result.disconnect);
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_NE(h.device->broken_reason().find("SET_VRING_NUM"), std::string::npos);
}

TEST(VhostUserDispatch, broken_device_refuses_every_later_message) {
    DeviceHarness h;
    h.device->mark_broken("test");
    auto r = h.send(RequestBuilder(Request::get_features));
    EXPECT_EQ(r.result.error, MessageError::device_broken);
    EXPECT_FALSE(r.result.has_reply);
    EXPECT_TRUE(r.result.disconnect);
    EXPECT_EQ(h.device->broken_reason(), "test");
}

TEST(VhostUserDispatch, rejects_unknown_request_id) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(static_cast<Request>(1000), kNeedReply));
    EXPECT_EQ(r.result.error, MessageError::unknown_request);
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.u64(), 1u);
}

TEST(VhostUserDispatch, rejects_unsupported_request) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::iotlb_msg, kNeedReply).size(64));
    EXPECT_EQ(r.result.error, MessageError::unsupported_request);
    EXPECT_TRUE(r.result.disconnect) << "IOTLB_MSG has its own reply we cannot give";
}

TEST(VhostUserDispatch, rejects_request_whose_protocol_feature_was_not_negotiated) {
    DeviceHarness h;
    auto r = h.send(RequestBuilder(Request::get_queue_num));
    EXPECT_EQ(r.result.error, MessageError::protocol_feature_not_negotiated);
    EXPECT_TRUE(r.result.disconnect);
}

TEST(VhostUserDispatch, refuses_set_log_base_without_log_shmfd_and_closes_its_fd) {
    DeviceHarness h;
    h.negotiate(kDefaultProtocolFeatures.without(ProtocolFeature::log_shmfd).bits());
    UniqueFd log = test::make_memfd(4096);
    RequestBuilder req(Request::set_log_base, kNeedReply);
    req.payload(LogBase{4096, 0}).fd(log.get());
    const int received = req.msg->fds[0].get();
    auto r = h.send(req);
    EXPECT_EQ(r.result.error, MessageError::protocol_feature_not_negotiated);
    EXPECT_FALSE(test::fd_is_open(received));
}

TEST(VhostUserDispatch, rejects_reply_flag_on_request) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_owner, kNeedReply | MessageHeader::kFlagReply));
    EXPECT_EQ(r.result.error, MessageError::reply_flag_on_request);
}

TEST(VhostUserDispatch, rejects_payload_size_mismatch) {
    DeviceHarness h;
    h.negotiate();
    const auto before = h.device->negotiated_features();
    auto r = h.send(RequestBuilder(Request::set_features, kNeedReply).payload(uint32_t{0}));
    EXPECT_EQ(r.result.error, MessageError::payload_size_mismatch);
    EXPECT_EQ(r.u64(), 1u);
    EXPECT_EQ(h.device->negotiated_features(), before);
}

TEST(VhostUserDispatch, rejects_payload_on_request_that_takes_none) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_owner, kNeedReply).payload(uint64_t{0}));
    EXPECT_EQ(r.result.error, MessageError::payload_size_mismatch);
}

TEST(VhostUserDispatch, rejects_fds_on_message_that_takes_none_and_closes_them) {
    DeviceHarness h;
    h.negotiate();
    UniqueFd e = test::make_eventfd();
    RequestBuilder req(Request::set_owner, kNeedReply);
    req.fd(e.get()).fd(e.get());
    const int first = req.msg->fds[0].get();
    const int second = req.msg->fds[1].get();
    auto r = h.send(req);
    EXPECT_EQ(r.result.error, MessageError::unexpected_fds);
    EXPECT_EQ(r.u64(), 1u);
    EXPECT_FALSE(test::fd_is_open(first));
    EXPECT_FALSE(test::fd_is_open(second));
}

TEST(VhostUserDispatch, rejects_kick_without_fd_unless_nofd_is_set) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(RequestBuilder(Request::set_vring_kick, kNeedReply).payload(uint64_t{0}));
    EXPECT_EQ(r.result.error, MessageError::wrong_fd_count);
}

TEST(VhostUserDispatch, rejects_kick_with_fd_when_nofd_is_set) {
    DeviceHarness h;
    h.negotiate();
    UniqueFd e = test::make_eventfd();
    auto r = h.send(RequestBuilder(Request::set_vring_kick, kNeedReply)
                        .payload(uint64_t{kVringNoFdFlag})
                        .fd(e.get()));
    EXPECT_EQ(r.result.error, MessageError::wrong_fd_count);
}

TEST(VhostUserDispatch, accepts_kick_with_nofd_and_no_fd) {
    DeviceHarness h;
    h.negotiate();
    auto r = h.send(
        RequestBuilder(Request::set_vring_kick, kNeedReply).payload(uint64_t{kVringNoFdFlag}));
    EXPECT_EQ(r.result.error, MessageError::ok);
    EXPECT_EQ(r.u64(), 0u);
}

TEST(VhostUserDispatch, rejects_add_mem_reg_without_fd) {
    DeviceHarness h;
    h.negotiate();
    SingleMemoryRegion reg{0, {0, 4096, 0x1000, 0}};
    auto r = h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(reg));
    EXPECT_EQ(r.result.error, MessageError::wrong_fd_count);
}

TEST(VhostUserDispatch, set_log_fd_is_accepted_and_its_fd_closed) {
    DeviceHarness h;
    h.negotiate();
    UniqueFd e = test::make_eventfd();
    RequestBuilder req(Request::set_log_fd, kNeedReply);
    req.fd(e.get());
    const int received = req.msg->fds[0].get();
    auto r = h.send(req);
    EXPECT_EQ(r.result.error, MessageError::ok);
    EXPECT_FALSE(test::fd_is_open(received));
}

}  // namespace
}  // namespace vnet::vhost_user
