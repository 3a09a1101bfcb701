// The control socket's JSON-RPC 2.0 handling, as the specification
// (jsonrpc.org/specification) says each case must be answered.
#include "control/rpc/method_table.hpp"

#include <gtest/gtest.h>

namespace vnet::control::rpc {
namespace {

using nlohmann::json;

class MethodTableTest : public ::testing::Test {
protected:
    void SetUp() override {
        table.add("echo", "returns its params", [](const json& p) { return p; });
        table.add("refuse", "always refused",
                  [](const json&) -> json { throw RpcError(ErrorCode::refused, "no port 'x'"); });
        table.add("crash", "throws something else",
                  [](const json&) -> json { throw std::runtime_error("out of cheese"); });
        table.add("need_name", "needs a string 'name'",
                  [](const json& p) { return json(string_param(p, "name")); });
    }
    json answer(const std::string& line) {
        auto out = table.handle_line(line);
        EXPECT_TRUE(out.has_value()) << line;
        return out ? json::parse(*out) : json();
    }
    static json error(const json& id, int code, const std::string& message) {
        return json{
            {"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
    }
    MethodTable table;
};

TEST_F(MethodTableTest, a_call_gets_its_result_under_its_own_id) {
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":1}})"),
              (json{{"jsonrpc", "2.0"}, {"id", 7}, {"result", {{"a", 1}}}}));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":"x","method":"echo","params":[1,2]})"),
              (json{{"jsonrpc", "2.0"}, {"id", "x"}, {"result", {1, 2}}}));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":null,"method":"echo"})")["result"], json::object())
        << "params left out are an empty object";
}

TEST_F(MethodTableTest, a_notification_is_run_but_never_answered) {
    int runs = 0;
    table.add("count", "", [&](const json&) { return json(++runs); });
    EXPECT_FALSE(table.handle_line(R"({"jsonrpc":"2.0","method":"count"})").has_value());
    EXPECT_EQ(runs, 1);
}

TEST_F(MethodTableTest, malformed_requests_get_the_spec_codes) {
    EXPECT_EQ(answer("{not json"), error(nullptr, -32700, "not a JSON text"));
    EXPECT_EQ(answer("[]"), error(nullptr, -32600, "an empty batch"));
    EXPECT_EQ(answer("5"), error(nullptr, -32600, "a request is a JSON object"));
    EXPECT_EQ(answer(R"({"id":1,"method":"echo"})"),
              error(1, -32600, "\"jsonrpc\" must be \"2.0\""));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":3})"),
              error(1, -32600, "\"method\" must be a string"));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":5})"),
              error(1, -32600, "\"params\" must be an object or an array"));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":{},"method":"echo"})"),
              error(nullptr, -32600, "\"id\" must be a string, a number or null"));
}

TEST_F(MethodTableTest, unknown_methods_and_handler_errors_are_named) {
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":1,"method":"nope"})"),
              error(1, -32601, "no method 'nope'"));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":2,"method":"refuse"})"),
              error(2, -32000, "no port 'x'"));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":3,"method":"crash"})"),
              error(3, -32603, "out of cheese"));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":4,"method":"need_name"})"),
              error(4, -32602, "missing parameter 'name'"));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":5,"method":"need_name","params":{"name":1}})"),
              error(5, -32602, "parameter 'name' must be a string"));
}

TEST_F(MethodTableTest, a_batch_answers_every_call_in_order_and_skips_notifications) {
    const json out = answer(R"([{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},)"
                            R"({"jsonrpc":"2.0","method":"echo"},)"
                            R"(7,)"
                            R"({"jsonrpc":"2.0","id":2,"method":"nope"}])");
    ASSERT_TRUE(out.is_array());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0]["result"], json({1}));
    EXPECT_EQ(out[1], error(nullptr, -32600, "a request is a JSON object"));
    EXPECT_EQ(out[2], error(2, -32601, "no method 'nope'"));
    EXPECT_FALSE(table.handle_line(R"([{"jsonrpc":"2.0","method":"echo"}])").has_value())
        << "a batch of notifications has no answer at all";
}

TEST_F(MethodTableTest, help_lists_every_method_with_its_help) {
    const json out = answer(R"({"jsonrpc":"2.0","id":1,"method":"help"})");
    EXPECT_EQ(out["result"]["echo"], "returns its params");
    EXPECT_EQ(out["result"].size(), 4u);
}

}  // namespace
}  // namespace vnet::control::rpc
