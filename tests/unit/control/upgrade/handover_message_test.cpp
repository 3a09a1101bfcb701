// The upgrade-in-place hand-over messages: what one vnetd sends the other,
// and every way a message from the other process can be wrong.
#include "control/lifecycle/upgrade/handover_message.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "control/lifecycle/upgrade/handover_link.hpp"

namespace vnet::control::upgrade {
namespace {

HandoverMessage decoded(std::string_view text, size_t fds) {
    auto result = decode_handover(text, fds);
    EXPECT_TRUE(std::holds_alternative<HandoverMessage>(result)) << std::get<std::string>(result);
    return std::get<HandoverMessage>(result);
}

std::string refusal(std::string_view text, size_t fds) {
    auto result = decode_handover(text, fds);
    EXPECT_TRUE(std::holds_alternative<std::string>(result));
    return std::holds_alternative<std::string>(result) ? std::get<std::string>(result) : "";
}

TEST(HandoverMessage, an_offer_round_trips_with_its_kind_name_key_and_fd_count) {
    const HandoverMessage m = handover_offer("tap", "uplink", "tap-up0", 4);
    const HandoverMessage back = decoded(encode_handover(m), 4);
    EXPECT_EQ(back.type, HandoverType::offer);
    EXPECT_EQ(back.kind, "tap");
    EXPECT_EQ(back.name, "uplink");
    EXPECT_EQ(back.key, "tap-up0");
    EXPECT_EQ(back.fds, 4u);
}

TEST(HandoverMessage, every_type_round_trips) {
    for (HandoverType t : {HandoverType::end, HandoverType::ready, HandoverType::released}) {
        EXPECT_EQ(decoded(encode_handover(handover_of_type(t)), 0).type, t) << to_string(t);
    }
    const HandoverMessage failed = decoded(encode_handover(handover_failed("bad config")), 0);
    EXPECT_EQ(failed.type, HandoverType::failed);
    EXPECT_EQ(failed.reason, "bad config");
}

TEST(HandoverMessage, rejects_an_fd_count_that_does_not_match_the_fds_received) {
    const std::string text = encode_handover(handover_offer("tap", "t0", "t0", 2));
    EXPECT_EQ(refusal(text, 1), "handover offer for tap 't0': 2 fds announced, 1 received");
    EXPECT_EQ(refusal(text, 3), "handover offer for tap 't0': 2 fds announced, 3 received");
}

TEST(HandoverMessage, rejects_fds_that_come_with_a_message_announcing_none) {
    EXPECT_EQ(refusal(encode_handover(handover_of_type(HandoverType::ready)), 1),
              "handover ready: 0 fds announced, 1 received");
}

TEST(HandoverMessage, rejects_an_offer_of_no_fds_or_more_than_one_message_carries) {
    EXPECT_EQ(refusal(R"({"vnetd_handover":1,"type":"offer","kind":"tap","name":"t","key":"t",)"
                      R"("fds":0})",
                      0),
              "handover offer for tap 't': 0 fds announced, not 1..253");
    EXPECT_EQ(refusal(R"({"vnetd_handover":1,"type":"offer","kind":"tap","name":"t","key":"t",)"
                      R"("fds":254})",
                      254),
              "handover offer for tap 't': 254 fds announced, not 1..253");
}

TEST(HandoverMessage, rejects_another_version) {
    EXPECT_EQ(refusal(R"({"vnetd_handover":2,"type":"ready"})", 0),
              "handover message: version 2, this vnetd speaks 1");
    EXPECT_EQ(refusal(R"({"type":"ready"})", 0), "handover message: no vnetd_handover version");
}

TEST(HandoverMessage, rejects_an_unknown_type_and_what_is_not_json) {
    EXPECT_EQ(refusal(R"({"vnetd_handover":1,"type":"take_all"})", 0),
              R"(handover message: unknown type "take_all")");
    EXPECT_EQ(refusal(R"({"vnetd_handover":1})", 0), "handover message: unknown type (none)");
    EXPECT_EQ(refusal("not json", 0), "handover message: not a JSON object");
    EXPECT_EQ(refusal("[1,2]", 0), "handover message: not a JSON object");
}

TEST(HandoverMessage, rejects_an_offer_without_its_members) {
    EXPECT_EQ(refusal(R"({"vnetd_handover":1,"type":"offer","kind":"tap","fds":1})", 1),
              "handover offer: needs kind, name, key (strings) and fds (a count)");
    EXPECT_EQ(refusal(R"({"vnetd_handover":1,"type":"offer","kind":"tap","name":"t","key":"t",)"
                      R"("fds":-1})",
                      0),
              "handover offer: needs kind, name, key (strings) and fds (a count)");
}

// Over a real socketpair: the fds arrive as new fds of the same files, and
// a message whose fds do not match what it announces is refused with them
// closed.
TEST(HandoverLink, passes_fds_with_an_offer_and_refuses_a_count_mismatch) {
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends), 0);
    HandoverLink old_side{UniqueFd(ends[0])};
    HandoverLink new_side{UniqueFd(ends[1])};
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);

    const int passed[] = {write_end.get()};
    ASSERT_TRUE(old_side.send(handover_offer("tap", "t0", "t0", 1), passed));
    auto got = new_side.receive(std::chrono::milliseconds(1000));
    ASSERT_TRUE(std::holds_alternative<ReceivedHandover>(got)) << std::get<std::string>(got);
    auto& received = std::get<ReceivedHandover>(got);
    ASSERT_EQ(received.fds.size(), 1u);
    ASSERT_EQ(::write(received.fds[0].get(), "x", 1), 1);
    char c = 0;
    ASSERT_EQ(::read(read_end.get(), &c, 1), 1);
    EXPECT_EQ(c, 'x');

    // Two fds announced, one sent.
    ASSERT_TRUE(old_side.send(handover_offer("tap", "t0", "t0", 2), passed));
    auto bad = new_side.receive(std::chrono::milliseconds(1000));
    ASSERT_TRUE(std::holds_alternative<std::string>(bad));
    EXPECT_EQ(std::get<std::string>(bad),
              "handover offer for tap 't0': 2 fds announced, 1 received");

    EXPECT_EQ(std::get<std::string>(new_side.receive(std::chrono::milliseconds(10))),
              "timed out after 10 ms");
    old_side = HandoverLink(UniqueFd());
    EXPECT_EQ(std::get<std::string>(new_side.receive(std::chrono::milliseconds(1000))), "closed");
}

}  // namespace
}  // namespace vnet::control::upgrade
