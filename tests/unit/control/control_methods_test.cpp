// The control methods as a client meets them: every method typed against
// its schema before anything is done, and each wrong type named.
#include "control/rpc/control_methods.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "control/config/option_table.hpp"
#include "unit/control/recording_control_api.hpp"

namespace vnet::control {
namespace {

using nlohmann::json;
using rpc::ParamType;

// Values of the wrong JSON type for each parameter type.
std::vector<json> wrong_values(ParamType type) {
    switch (type) {
        case ParamType::string:
            return {12, true, nullptr, json::array(), json::object()};
        case ParamType::absolute_path:
            return {12, true, "relative/vm.sock", json::array({"/a"})};
        case ParamType::uint32:
            return {"5", -1, 1.5, true, 4294967296ull};
        case ParamType::boolean:
            return {"on", 1, nullptr};
        case ParamType::integer_or_text:
            return {true, -1, 1.5, json::array(), json::object()};
        case ParamType::on_off:
            return {1, nullptr, json::array(), json::object()};
        case ParamType::list:
            return {12, true, json::object(), json::array({json::array()}), json::array({true})};
        case ParamType::any:
            return {};
    }
    return {};
}

class ControlMethodsTest : public ::testing::Test {
protected:
    void SetUp() override { add_control_methods(table, api.parts()); }
    json call(const std::string& method, const json& params) {
        const json request{{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
        auto line = table.handle_line(request.dump());
        EXPECT_TRUE(line.has_value());
        return line ? json::parse(*line) : json();
    }
    rpc::MethodTable table;
    RecordingControlApi api;
};

// Each method, what it takes, and params that fit (to which one wrong
// parameter at a time is added).
struct MethodCase {
    std::string method;
    json good;
    std::vector<std::pair<std::string, ParamType>> params;
};

const std::vector<MethodCase>& method_cases() {
    static const std::vector<MethodCase> cases = {
        {"version", json::object(), {}},
        {"options.list", json::object(), {{"scope", ParamType::string}}},
        {"stats", json::object(), {{"port", ParamType::string}}},
        {"port.list", json::object(), {}},
        {"reload", json::object(), {}},
        {"port.show", json::object(), {{"name", ParamType::string}}},
        {"port.add",
         {{"name", "vm9"}, {"type", "vhost-user"}, {"socket_path", "/run/vm9.sock"}},
         {{"name", ParamType::string}, {"type", ParamType::string}, {"peer", ParamType::string}}},
        {"port.del", {{"name", "vm9"}}, {{"name", ParamType::string}}},
        {"port.set",
         {{"name", "vm9"}, {"ingress_policing_rate", 10}},
         {{"name", ParamType::string},
          {"ingress_policing_rate", ParamType::uint32},
          {"ingress_policing_burst", ParamType::uint32}}},
        {"upgrade", json::object(), {{"binary", ParamType::absolute_path}}},
        {"switch.add", {{"name", "s9"}}, {{"name", ParamType::string}}},
        {"switch.del", {{"name", "s9"}}, {{"name", ParamType::string}}},
        {"uplink.peer.add",
         {{"switch", "s9"}, {"address", "10.0.0.2"}},
         {{"switch", ParamType::string}, {"address", ParamType::string}}},
        {"uplink.peer.del",
         {{"switch", "s9"}, {"address", "10.0.0.2"}},
         {{"switch", ParamType::string}, {"address", ParamType::string}}},
        {"switch.list", json::object(), {{"switch", ParamType::string}}},
        {"mac.list", json::object(), {{"switch", ParamType::string}}},
        {"mac.flush", json::object(), {{"switch", ParamType::string}, {"port", ParamType::string}}},
        {"log.level", json::object(), {{"level", ParamType::string}}},
        {"worker.list", json::object(), {}},
    };
    return cases;
}

TEST_F(ControlMethodsTest, the_cases_cover_every_method) {
    std::set<std::string> listed;
    for (const MethodCase& c : method_cases()) {
        listed.insert(c.method);
    }
    std::set<std::string> served;
    const json described = table.describe();
    for (const auto& [name, help] : described.items()) {
        served.insert(name);
    }
    EXPECT_EQ(listed, served) << "a new method needs its row in method_cases()";
}

TEST_F(ControlMethodsTest, params_that_fit_reach_the_api_once) {
    for (const MethodCase& c : method_cases()) {
        api.calls.clear();
        const json r = call(c.method, c.good);
        EXPECT_TRUE(r.contains("result")) << c.method << ": " << r.dump();
        const bool answered_by_the_table = c.method == "version" || c.method == "options.list";
        EXPECT_EQ(api.calls.size(), answered_by_the_table ? 0u : 1u) << c.method;
    }
}

TEST_F(ControlMethodsTest, every_parameter_of_the_wrong_type_is_refused_and_nothing_is_done) {
    for (const MethodCase& c : method_cases()) {
        for (const auto& [param, type] : c.params) {
            for (const json& bad : wrong_values(type)) {
                json params = c.good;
                params[param] = bad;
                api.calls.clear();
                const json r = call(c.method, params);
                EXPECT_EQ(r["error"]["code"], -32602) << c.method << " " << params.dump();
                EXPECT_EQ(r["error"]["message"].get<std::string>().rfind(
                              "parameter '" + param + "' must be " +
                                  std::string(rpc::describe(type)) + ", not ",
                              0),
                          0u)
                    << r.dump();
                EXPECT_TRUE(api.calls.empty()) << c.method << " " << params.dump();
            }
        }
        // A name the method does not take.
        json params = c.good;
        params["bogus"] = 1;
        api.calls.clear();
        EXPECT_EQ(call(c.method, params)["error"]["code"], -32602) << c.method;
        EXPECT_TRUE(api.calls.empty());
        // By position.
        EXPECT_EQ(call(c.method, json::array({1}))["error"]["message"], "params must be an object");
    }
}

TEST_F(ControlMethodsTest, every_port_and_switch_option_is_typed_by_its_row) {
    for (const OptionSpec& o : option_table()) {
        if (o.scope != OptionScope::port && o.scope != OptionScope::switch_) {
            continue;
        }
        const bool port = o.scope == OptionScope::port;
        const std::string key(o.key);
        for (const json& bad : wrong_values(param_type(o))) {
            json params = port ? json{{"name", "p"}, {"type", "null"}} : json{{"name", "s"}};
            params[key] = bad;
            api.calls.clear();
            const json r = call(port ? "port.add" : "switch.add", params);
            EXPECT_EQ(r["error"]["code"], -32602) << params.dump();
            EXPECT_NE(r["error"]["message"].get<std::string>().find("'" + key + "'"),
                      std::string::npos)
                << r.dump();
            EXPECT_TRUE(api.calls.empty()) << params.dump();
        }
    }
}

TEST_F(ControlMethodsTest, option_rows_get_the_json_types_their_values_have) {
    auto type_of = [](OptionScope scope, std::string_view key) {
        const OptionSpec* o = find_option(scope, key);
        EXPECT_NE(o, nullptr) << key;
        return o != nullptr ? param_type(*o) : ParamType::any;
    };
    EXPECT_EQ(type_of(OptionScope::port, "socket_path"), ParamType::absolute_path);
    EXPECT_EQ(type_of(OptionScope::port, "client"), ParamType::on_off);
    EXPECT_EQ(type_of(OptionScope::port, "tap"), ParamType::string);
    EXPECT_EQ(type_of(OptionScope::port, "queue_pairs"), ParamType::integer_or_text);
    EXPECT_EQ(type_of(OptionScope::port, "socket_mode"), ParamType::integer_or_text);
    EXPECT_EQ(type_of(OptionScope::port, "vlan"), ParamType::integer_or_text);
    EXPECT_EQ(type_of(OptionScope::port, "vni"), ParamType::integer_or_text);
    EXPECT_EQ(type_of(OptionScope::port, "trunk"), ParamType::list);
    EXPECT_EQ(type_of(OptionScope::port, "vxlan_remote"), ParamType::list);
    EXPECT_EQ(type_of(OptionScope::port, "xdp"), ParamType::string);
    EXPECT_EQ(type_of(OptionScope::switch_, "mac_aging_s"), ParamType::integer_or_text);
}

TEST_F(ControlMethodsTest, options_list_is_the_option_table) {
    const json all = call("options.list", json::object())["result"];
    ASSERT_EQ(all.size(), option_table().size());
    const json ports = call("options.list", {{"scope", "port"}})["result"];
    size_t port_rows = 0;
    for (const OptionSpec& o : option_table()) {
        if (o.scope != OptionScope::port) {
            continue;
        }
        const json& row = ports.at(port_rows++);
        EXPECT_EQ(row["key"], std::string(o.key));
        EXPECT_EQ(row["flag"], flag_of(o));
        EXPECT_EQ(row["value"], std::string(o.value_name));
        EXPECT_EQ(row.contains("kind"), o.port_type.has_value()) << o.key;
        if (o.port_type) {
            EXPECT_EQ(row["kind"], to_string(*o.port_type)) << o.key;
        }
    }
    EXPECT_EQ(ports.size(), port_rows);
    const json socket_path = *std::find_if(ports.begin(), ports.end(),
                                           [](const json& r) { return r["key"] == "socket_path"; });
    EXPECT_EQ(socket_path["kind"], "vhost-user");
    const json switch_rows = call("options.list", {{"scope", "switch"}});
    for (const json& row : switch_rows["result"]) {
        EXPECT_FALSE(row.contains("flag")) << row.dump();
    }
    const json bad = call("options.list", {{"scope", "ports"}});
    EXPECT_EQ(bad["error"]["code"], -32602);
    EXPECT_EQ(bad["error"]["message"], "no option scope 'ports' (daemon, datapath, port, switch)");
    EXPECT_TRUE(api.calls.empty());
}

TEST_F(ControlMethodsTest, a_socket_path_must_be_an_absolute_path) {
    auto add = [&](const json& socket_path) {
        return call("port.add",
                    {{"name", "vm1"}, {"type", "vhost-user"}, {"socket_path", socket_path}});
    };
    const std::string want =
        "parameter 'socket_path' must be an absolute path (a string starting with /), not ";
    EXPECT_EQ(add(12)["error"]["message"], want + "an integer");
    EXPECT_EQ(add(true)["error"]["message"], want + "a boolean");
    EXPECT_EQ(add("vm1.sock")["error"]["message"], want + "the relative path 'vm1.sock'");
    EXPECT_TRUE(api.calls.empty());
    EXPECT_TRUE(add("/run/vnetd/vm1.sock").contains("result"));
    ASSERT_EQ(api.calls.size(), 1u);
    EXPECT_EQ(api.calls[0], "add_port vm1 vhost-user peer= socket_path=/run/vnetd/vm1.sock");
}

TEST_F(ControlMethodsTest, option_values_reach_the_rows_as_a_flag_would_say_them) {
    EXPECT_TRUE(call("port.add", {{"name", "t1"},
                                  {"type", "tap"},
                                  {"napi_frags", true},
                                  {"mtu", 9000},
                                  {"trunk", {10, "20"}}})
                    .contains("result"));
    ASSERT_EQ(api.calls.size(), 1u);
    EXPECT_EQ(api.calls[0], "add_port t1 tap peer= mtu=9000 napi_frags=on trunk=10,20");
}

TEST_F(ControlMethodsTest, what_the_api_refuses_comes_back_as_refused_with_its_reason) {
    const json r = call("port.add", {{"name", "x"}, {"type", "floppy"}});
    EXPECT_EQ(r["error"]["code"], -32000);
    EXPECT_EQ(r["error"]["message"],
              "port 'x': type must be vhost-user, tap, null or vxlan, not 'floppy'");
    EXPECT_EQ(call("port.set", {{"name", "x"}})["error"]["message"],
              "nothing to set: give ingress_policing_rate and/or ingress_policing_burst");
}

TEST_F(ControlMethodsTest, mac_flush_passes_its_switch_and_port) {
    EXPECT_EQ(call("mac.flush", json::object())["result"], json({{"flushed", 3}}));
    EXPECT_TRUE(call("mac.flush", {{"switch", "s0"}}).contains("result"));
    EXPECT_TRUE(call("mac.flush", {{"switch", "s0"}, {"port", "vm1"}}).contains("result"));
    EXPECT_EQ(api.calls,
              (std::vector<std::string>{"flush_macs switch=* port=*", "flush_macs switch=s0 port=*",
                                        "flush_macs switch=s0 port=vm1"}));
}

TEST_F(ControlMethodsTest, log_level_takes_only_a_level_it_knows) {
    EXPECT_EQ(call("log.level", json::object())["result"], json({{"level", "info"}}));
    EXPECT_EQ(call("log.level", {{"level", "debug"}})["result"], json({{"level", "debug"}}));
    api.calls.clear();
    const json r = call("log.level", {{"level", "loud"}});
    EXPECT_EQ(r["error"]["code"], -32602);
    EXPECT_EQ(r["error"]["message"],
              "level must be one of trace, debug, info, warn, error, critical, off, not 'loud'");
    EXPECT_TRUE(api.calls.empty());
}

TEST_F(ControlMethodsTest, stats_of_one_port_keeps_that_port_only) {
    struct StatsApi final : RecordingControlApi {
        nlohmann::json stats() override {
            return {{"seconds", 1.5}, {"ports", {{{"name", "vm0"}}, {{"name", "tap0"}}}}};
        }
    };
    StatsApi stats_api;
    rpc::MethodTable t;
    add_control_methods(t, stats_api.parts());
    auto ask = [&](const json& params) {
        const json request{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "stats"}, {"params", params}};
        return json::parse(*t.handle_line(request.dump()));
    };
    EXPECT_EQ(ask(json::object())["result"]["ports"].size(), 2u);
    EXPECT_EQ(ask({{"port", "tap0"}})["result"],
              json({{"seconds", 1.5}, {"ports", {{{"name", "tap0"}}}}}));
    const json r = ask({{"port", "nope"}});
    EXPECT_EQ(r["error"]["code"], -32000);
    EXPECT_EQ(r["error"]["message"], "no port named 'nope'");
}

}  // namespace
}  // namespace vnet::control
