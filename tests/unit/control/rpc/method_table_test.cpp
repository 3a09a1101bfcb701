// The control socket's JSON-RPC 2.0 handling, as the specification
// (jsonrpc.org/specification) says each case must be answered.
#include "control/rpc/method_table.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "control/rpc/caller.hpp"

namespace vnet::control::rpc {
namespace {

using nlohmann::json;

// Any name, any value: the echo method's schema.
std::optional<ParamType> anything(std::string_view) {
    return ParamType::any;
}

// A string of `depth` nested arrays ("[[[]]]") or objects ({"a":{"a":{}}}).
std::string nested(size_t depth, bool objects) {
    std::string s;
    s.reserve(depth * 6);
    for (size_t i = 0; i < depth; ++i) {
        s += objects ? "{\"a\":" : "[";
    }
    s += objects ? "1" : "";
    for (size_t i = 0; i < depth; ++i) {
        s += objects ? "}" : "]";
    }
    return s;
}

class MethodTableTest : public ::testing::Test {
protected:
    void SetUp() override {
        table.add("echo", "returns its params", ParamSchema({}, anything),
                  [](const json& p) { return p; });
        table.add("refuse", "always refused", ParamSchema{},
                  [](const json&) -> json { throw RpcError(ErrorCode::refused, "no port 'x'"); });
        table.add("crash", "throws something else", ParamSchema{},
                  [](const json&) -> json { throw std::runtime_error("out of cheese"); });
        table.add("need_name", "needs a string 'name'",
                  ParamSchema({{"name", ParamType::string, true}}),
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
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":"x","method":"echo","params":[]})"),
              (json{{"jsonrpc", "2.0"}, {"id", "x"}, {"result", json::array()}}))
        << "an empty array is no params";
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":null,"method":"echo"})")["result"], json::object())
        << "params left out are an empty object";
}

TEST_F(MethodTableTest, a_notification_is_run_but_never_answered) {
    int runs = 0;
    table.add("count", "", ParamSchema{}, [&](const json&) { return json(++runs); });
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
              error(4, -32602, "missing parameter 'name' (a string)"));
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":5,"method":"need_name","params":{"name":1}})"),
              error(5, -32602, "parameter 'name' must be a string, not an integer"));
}

TEST_F(MethodTableTest, a_batch_answers_every_call_in_order_and_skips_notifications) {
    const json out = answer(R"([{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}},)"
                            R"({"jsonrpc":"2.0","method":"echo"},)"
                            R"(7,)"
                            R"({"jsonrpc":"2.0","id":2,"method":"nope"}])");
    ASSERT_TRUE(out.is_array());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0]["result"], (json{{"a", 1}}));
    EXPECT_EQ(out[1], error(nullptr, -32600, "a request is a JSON object"));
    EXPECT_EQ(out[2], error(2, -32601, "no method 'nope'"));
    EXPECT_FALSE(table.handle_line(R"([{"jsonrpc":"2.0","method":"echo"}])").has_value())
        << "a batch of notifications has no answer at all";
}

TEST_F(MethodTableTest, params_that_do_not_fit_the_schema_never_reach_the_handler) {
    int runs = 0;
    table.add("typed", "",
              ParamSchema({{"name", ParamType::string, true},
                           {"path", ParamType::absolute_path},
                           {"rate", ParamType::uint32},
                           {"on", ParamType::boolean},
                           {"items", ParamType::list}}),
              [&](const json&) { return json(++runs); });
    auto call = [&](const std::string& params) {
        return answer(R"({"jsonrpc":"2.0","id":1,"method":"typed","params":)" + params + "}");
    };
    EXPECT_EQ(call(R"({"name":"a","path":"/run/a","rate":5,"on":true,"items":["x",2]})"),
              (json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", 1}}));
    EXPECT_EQ(call(R"({"name":true})"),
              error(1, -32602, "parameter 'name' must be a string, not a boolean"));
    EXPECT_EQ(call(R"({"name":"a","path":12})"),
              error(1, -32602,
                    "parameter 'path' must be an absolute path (a string starting with /), "
                    "not an integer"));
    EXPECT_EQ(call(R"({"name":"a","path":"run/a"})"),
              error(1, -32602,
                    "parameter 'path' must be an absolute path (a string starting with /), "
                    "not the relative path 'run/a'"));
    EXPECT_EQ(call(R"({"name":"a","rate":-1})"),
              error(1, -32602,
                    "parameter 'rate' must be an integer 0..4294967295, not a negative integer"));
    EXPECT_EQ(
        call(R"({"name":"a","rate":4294967296})"),
        error(1, -32602, "parameter 'rate' must be an integer 0..4294967295, not 4294967296"));
    EXPECT_EQ(
        call(R"({"name":"a","rate":1.5})"),
        error(1, -32602, "parameter 'rate' must be an integer 0..4294967295, not a fraction"));
    EXPECT_EQ(call(R"({"name":"a","on":"yes"})"),
              error(1, -32602, "parameter 'on' must be true or false, not a string"));
    EXPECT_EQ(call(R"({"name":"a","items":[["x"]]})"),
              error(1, -32602,
                    "parameter 'items' must be a string or an array of strings and non-negative "
                    "integers, not an array holding an array"));
    EXPECT_EQ(
        call(R"({"name":"a","nmae":"b"})"),
        error(1, -32602, "unknown parameter 'nmae' (typed takes name, path, rate, on, items)"));
    EXPECT_EQ(call(R"(["a"])"), error(1, -32602, "params must be an object"));
    EXPECT_EQ(runs, 1) << "only the call that fit ran";
    EXPECT_EQ(answer(R"({"jsonrpc":"2.0","id":2,"method":"refuse","params":{"x":1}})"),
              error(2, -32602, "unknown parameter 'x' (refuse takes none)"));
}

TEST_F(MethodTableTest, deep_nesting_is_refused_without_recursing_however_deep) {
    // 10^6 levels would overflow the stack of anything that recursed per level.
    for (const size_t depth : {33u, 10'000u, 1'000'000u}) {
        for (const bool objects : {true, false}) {
            const std::string line = R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":)" +
                                     nested(depth, objects) + "}}";
            EXPECT_EQ(answer(line),
                      error(nullptr, -32600, "a request nested deeper than 32 levels"))
                << depth << (objects ? " objects" : " arrays");
            EXPECT_EQ(answer(nested(depth, objects)),
                      error(nullptr, -32600, "a request nested deeper than 32 levels"));
        }
    }
    // The request object and its params are 2 levels: 30 more fit, 31 do not.
    const std::string fits =
        R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":)" + nested(30, false) + "}}";
    EXPECT_TRUE(answer(fits).contains("result"));
    const std::string over =
        R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":)" + nested(31, false) + "}}";
    EXPECT_EQ(answer(over)["error"]["code"], -32600);
}

TEST_F(MethodTableTest, a_batch_is_bounded) {
    std::string batch = "[";
    for (size_t i = 0; i <= MethodTable::kMaxBatch; ++i) {
        batch += std::string(i == 0 ? "" : ",") + R"({"jsonrpc":"2.0","id":1,"method":"echo"})";
    }
    batch += "]";
    EXPECT_EQ(answer(batch), error(nullptr, -32600, "a batch of more than 64 requests"));
}

TEST_F(MethodTableTest, help_lists_every_method_with_its_help) {
    const json out = answer(R"({"jsonrpc":"2.0","id":1,"method":"help"})");
    EXPECT_EQ(out["result"]["echo"], "returns its params");
    EXPECT_EQ(out["result"].size(), 4u);
}

TEST_F(MethodTableTest, a_refused_request_is_logged_with_its_caller_and_answer_and_nothing_else) {
    std::ostringstream lines;
    auto log = std::make_shared<spdlog::logger>(
        "refusals", std::make_shared<spdlog::sinks::ostream_sink_st>(lines));
    log->set_pattern("%v");
    table.log_refusals(log);
    const CallerScope caller{Caller{1000, 4242}};

    answer(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}})");
    EXPECT_EQ(lines.str(), "") << "an answered call is the audit's to log, not the table's";
    answer(R"({"jsonrpc":"2.0","id":1,"method":"refuse"})");
    answer(R"({"jsonrpc":"2.0","id":2,"method":"need_name","params":{}})");
    answer(R"({"jsonrpc":"2.0","id":3,"method":"no\nsuch"})");
    answer("{\"jsonrpc\":\"2.0\",");
    EXPECT_EQ(lines.str(),
              "control: uid 1000 \"refuse\" refused (-32000): \"no port 'x'\"\n"
              "control: uid 1000 \"need_name\" refused (-32602): \"missing parameter 'name' (a "
              "string)\"\n"
              "control: uid 1000 \"no\\nsuch\" refused (-32601): \"no method 'no\\nsuch'\"\n"
              "control: uid 1000 a request refused (-32700): \"not a JSON text\"\n")
        << "a newline in a request is escaped: it cannot forge a log line";

    lines.str("");
    answer(R"({"jsonrpc":"2.0","id":4,"method":")" + std::string(300, 'm') + R"("})");
    const std::string cut = "\"" + std::string(200, 'm') + "\"...";
    EXPECT_EQ(lines.str(), "control: uid 1000 " + cut + " refused (-32601): \"no method '" +
                               std::string(189, 'm') + "\"...\n")
        << "a long request is cut in the log, not in the answer";
}

}  // namespace
}  // namespace vnet::control::rpc
