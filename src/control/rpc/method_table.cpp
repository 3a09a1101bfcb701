#include "control/rpc/method_table.hpp"

#include "control/rpc/caller.hpp"

namespace vnet::control::rpc {
namespace {

using nlohmann::json;

json error_response(const json& id, ErrorCode code, const std::string& message) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"error", {{"code", static_cast<int>(code)}, {"message", message}}}};
}

// §4: an id is a string, a number or null; anything else is no id at all.
bool valid_id(const json& id) {
    return id.is_string() || id.is_number() || id.is_null();
}

// Parses `line` with its nesting bounded: nlohmann's parser is iterative,
// and the callback discards any object or array that would open past
// `max_depth` (its contents are still scanned, never built), so neither
// parsing nor anything done with the result recurses past the bound.
// Sets *too_deep when it discarded something.
json parse_bounded(std::string_view line, int max_depth, bool* too_deep) {
    *too_deep = false;
    const json::parser_callback_t bound = [max_depth, too_deep](int depth,
                                                                json::parse_event_t event, json&) {
        if ((event == json::parse_event_t::object_start ||
             event == json::parse_event_t::array_start) &&
            depth >= max_depth) {
            *too_deep = true;
            return false;
        }
        return true;
    };
    return json::parse(line, bound, /*allow_exceptions=*/false);
}

// `text` from a request as one safe log field: JSON-quoted (a newline or an
// escape sequence cannot forge a log line or drive a terminal) and cut to
// kLoggedChars bytes (a request line may be long; the log line is not).
std::string loggable(std::string_view text) {
    constexpr size_t kLoggedChars = 200;
    const bool cut = text.size() > kLoggedChars;
    const std::string quoted = json(std::string(text.substr(0, kLoggedChars)))
                                   .dump(-1, ' ', false, json::error_handler_t::replace);
    return cut ? quoted + "..." : quoted;
}

const json& no_params() {
    static const json empty = json::object();
    return empty;
}

}  // namespace

void MethodTable::add(std::string name, std::string help, ParamSchema params, Handler handler) {
    methods_[std::move(name)] = Method{std::move(help), std::move(params), std::move(handler)};
}

void MethodTable::log_refusals(Logger log) {
    refusal_log_ = std::move(log);
}

json MethodTable::refusal(const json& id, ErrorCode code, const std::string& message,
                          std::string_view method) const {
    if (refusal_log_) {
        const std::optional<Caller> caller = current_caller();
        refusal_log_->info("control: {} {} refused ({}): {}",
                           caller ? "uid " + std::to_string(caller->uid) : "uid ?",
                           method.empty() ? std::string("a request") : loggable(method),
                           static_cast<int>(code), loggable(message));
    }
    return error_response(id, code, message);
}

json MethodTable::describe() const {
    json out = json::object();
    for (const auto& [name, m] : methods_) {
        out[name] = m.help;
    }
    return out;
}

std::optional<json> MethodTable::handle_request(const json& request) const {
    if (!request.is_object()) {
        return refusal(nullptr, ErrorCode::invalid_request, "a request is a JSON object");
    }
    const bool has_id = request.contains("id");
    const json id = has_id && valid_id(request["id"]) ? request["id"] : json(nullptr);
    if (has_id && !valid_id(request["id"])) {
        return refusal(nullptr, ErrorCode::invalid_request,
                       "\"id\" must be a string, a number or null");
    }
    auto it = request.find("jsonrpc");
    if (it == request.end() || *it != "2.0") {
        return refusal(id, ErrorCode::invalid_request, "\"jsonrpc\" must be \"2.0\"");
    }
    it = request.find("method");
    if (it == request.end() || !it->is_string()) {
        return refusal(id, ErrorCode::invalid_request, "\"method\" must be a string");
    }
    const std::string& name = it->get_ref<const std::string&>();
    const json* params = &no_params();
    if (auto p = request.find("params"); p != request.end()) {
        if (!p->is_object() && !p->is_array()) {
            return refusal(id, ErrorCode::invalid_request,
                           "\"params\" must be an object or an array", name);
        }
        params = &*p;
    }
    json response;
    try {
        if (name == "help") {
            ParamSchema{}.check(name, *params);
            response = json{{"jsonrpc", "2.0"}, {"id", id}, {"result", describe()}};
        } else if (auto m = methods_.find(name); m == methods_.end()) {
            response = refusal(id, ErrorCode::method_not_found, "no method '" + name + "'", name);
        } else {
            m->second.params.check(name, *params);
            response = json{{"jsonrpc", "2.0"}, {"id", id}, {"result", m->second.handler(*params)}};
        }
    } catch (const RpcError& e) {
        response = refusal(id, e.code, e.what(), name);
    } catch (const std::exception& e) {
        response = refusal(id, ErrorCode::internal_error, e.what(), name);
    }
    if (!has_id) {
        return std::nullopt;  // a notification: done, never answered
    }
    return response;
}

std::optional<std::string> MethodTable::handle_line(std::string_view line) const {
    bool too_deep = false;
    const json request = parse_bounded(line, kMaxDepth, &too_deep);
    if (too_deep) {
        return refusal(nullptr, ErrorCode::invalid_request,
                       "a request nested deeper than " + std::to_string(kMaxDepth) + " levels")
            .dump();
    }
    if (request.is_discarded()) {
        return refusal(nullptr, ErrorCode::parse_error, "not a JSON text").dump();
    }
    if (!request.is_array()) {
        auto response = handle_request(request);
        return response ? std::optional(response->dump()) : std::nullopt;
    }
    if (request.empty()) {
        return refusal(nullptr, ErrorCode::invalid_request, "an empty batch").dump();
    }
    if (request.size() > kMaxBatch) {
        return refusal(nullptr, ErrorCode::invalid_request,
                       "a batch of more than " + std::to_string(kMaxBatch) + " requests")
            .dump();
    }
    json responses = json::array();
    for (const json& r : request) {
        if (auto response = handle_request(r)) {
            responses.push_back(std::move(*response));
        }
    }
    if (responses.empty()) {
        return std::nullopt;
    }
    return responses.dump();
}

const nlohmann::json& required_param(const nlohmann::json& params, const char* name) {
    if (!params.is_object() || !params.contains(name)) {
        throw RpcError(ErrorCode::invalid_params, std::string("missing parameter '") + name + "'");
    }
    return params[name];
}

std::string string_param(const nlohmann::json& params, const char* name) {
    const json& v = required_param(params, name);
    if (!v.is_string()) {
        throw RpcError(ErrorCode::invalid_params,
                       std::string("parameter '") + name + "' must be a string");
    }
    return v.get<std::string>();
}

std::optional<std::string> optional_string_param(const nlohmann::json& params, const char* name) {
    if (!params.is_object() || !params.contains(name)) {
        return std::nullopt;
    }
    return string_param(params, name);
}

std::optional<uint32_t> optional_uint32_param(const nlohmann::json& params, const char* name) {
    if (!params.is_object() || !params.contains(name)) {
        return std::nullopt;
    }
    const json& v = params[name];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX) {
        throw RpcError(ErrorCode::invalid_params, std::string("parameter '") + name +
                                                      "' must be an integer 0.." +
                                                      std::to_string(UINT32_MAX));
    }
    return static_cast<uint32_t>(v.get<uint64_t>());
}

}  // namespace vnet::control::rpc
