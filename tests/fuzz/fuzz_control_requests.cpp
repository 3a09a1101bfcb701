// libFuzzer target: the control socket's request path over hostile bytes.
// The input is what a client writes: lines, each a JSON-RPC request or a
// batch, split as ControlServer splits them, then the method table (bounded
// parse, schemas), every control method's decoding and the option table's
// value parsers, against a RecordingControlApi: what the daemon would have
// done is recorded, nothing is performed.
//
// Must never crash, recurse without bound or read out of bounds (ASan);
// every answer is one JSON text shaped as JSON-RPC 2.0 says, with one of
// the codes vnetd uses; a request refused by its schema reaches no method.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "control/rpc/control_methods.hpp"
#include "fuzz_check.hpp"
#include "unit/control/recording_control_api.hpp"

using namespace vnet::control;
using nlohmann::json;

namespace {

bool known_code(const json& code) {
    if (!code.is_number_integer()) {
        return false;
    }
    switch (static_cast<rpc::ErrorCode>(code.get<int>())) {
        case rpc::ErrorCode::parse_error:
        case rpc::ErrorCode::invalid_request:
        case rpc::ErrorCode::method_not_found:
        case rpc::ErrorCode::invalid_params:
        case rpc::ErrorCode::internal_error:
        case rpc::ErrorCode::refused:
            return true;
    }
    return false;
}

void check_response(const json& r) {
    FUZZ_CHECK(r.is_object());
    FUZZ_CHECK(r.value("jsonrpc", "") == "2.0");
    FUZZ_CHECK(r.contains("id"));
    FUZZ_CHECK(r.contains("result") != r.contains("error"));
    if (r.contains("error")) {
        FUZZ_CHECK(known_code(r["error"]["code"]));
        FUZZ_CHECK(r["error"]["message"].is_string());
        // An internal error is a handler's bug, not the client's: none of
        // the methods may let one out for any input.
        FUZZ_CHECK(r["error"]["code"] != static_cast<int>(rpc::ErrorCode::internal_error));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static RecordingControlApi api;
    static const rpc::MethodTable table = [] {
        rpc::MethodTable t;
        add_control_methods(t, api.parts());
        return t;
    }();
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    size_t start = 0;
    for (size_t nl; (nl = input.find('\n', start)) != std::string_view::npos; start = nl + 1) {
        const std::string_view line = input.substr(start, nl - start);
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
            continue;  // as ControlServer: blank lines are not requests
        }
        api.calls.clear();
        const std::optional<std::string> answer = table.handle_line(line);
        if (!answer) {
            continue;  // notifications only
        }
        const json out = json::parse(*answer, nullptr, /*allow_exceptions=*/false);
        FUZZ_CHECK(!out.is_discarded());
        if (out.is_array()) {
            FUZZ_CHECK(!out.empty());
            for (const json& r : out) {
                check_response(r);
            }
        } else {
            check_response(out);
            // A single request refused before its method ran did nothing.
            if (out.contains("error") && out["error"]["code"] != -32000) {
                FUZZ_CHECK(api.calls.empty());
            }
        }
    }
    return 0;
}
