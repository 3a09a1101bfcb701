#include "control/rpc/param_schema.hpp"

#include <algorithm>

#include "control/rpc/rpc_error.hpp"

namespace vnet::control::rpc {
namespace {

using nlohmann::json;

// The JSON kind of a value that did not fit, for the error message.
std::string_view kind_of(const json& value) {
    switch (value.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::string:
            return "a string";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "an integer";
        case json::value_t::number_float:
            return "a fraction";
        case json::value_t::array:
            return "an array";
        case json::value_t::object:
            return "an object";
        default:
            return "a binary value";
    }
}

bool is_list_item(const json& item) {
    return item.is_string() || item.is_number_unsigned();
}

bool fits(const json& value, ParamType type) {
    switch (type) {
        case ParamType::string:
            return value.is_string();
        case ParamType::absolute_path:
            return value.is_string() && value.get_ref<const std::string&>().starts_with('/');
        case ParamType::uint32:
            return value.is_number_unsigned() && value.get<uint64_t>() <= UINT32_MAX;
        case ParamType::boolean:
            return value.is_boolean();
        case ParamType::integer_or_text:
            return value.is_number_unsigned() || value.is_string();
        case ParamType::on_off:
            return value.is_boolean() || value.is_string();
        case ParamType::list:
            return value.is_string() ||
                   (value.is_array() && std::all_of(value.begin(), value.end(), is_list_item));
        case ParamType::any:
            return true;
    }
    return false;
}

[[noreturn]] void invalid(const std::string& message) {
    throw RpcError(ErrorCode::invalid_params, message);
}

// "unknown parameter 'x' (port.set takes name, ...)"
std::string unknown_parameter(std::string_view method, const std::string& name,
                              const std::vector<ParamSpec>& named, std::string_view takes_note) {
    std::string message = "unknown parameter '" + name + "' (" + std::string(method) + " takes ";
    if (!takes_note.empty()) {
        message += takes_note;
    } else if (named.empty()) {
        message += "none";
    } else {
        for (size_t i = 0; i < named.size(); ++i) {
            message += i == 0 ? "" : ", ";
            message += named[i].name;
        }
    }
    return message + ")";
}

}  // namespace

std::string_view describe(ParamType type) {
    switch (type) {
        case ParamType::string:
            return "a string";
        case ParamType::absolute_path:
            return "an absolute path (a string starting with /)";
        case ParamType::uint32:
            return "an integer 0..4294967295";
        case ParamType::boolean:
            return "true or false";
        case ParamType::integer_or_text:
            return "a non-negative integer or a string";
        case ParamType::on_off:
            return "true, false, \"on\" or \"off\"";
        case ParamType::list:
            return "a string or an array of strings and non-negative integers";
        case ParamType::any:
            return "any JSON value";
    }
    return "?";
}

void check_param(std::string_view name, const json& value, ParamType type) {
    if (fits(value, type)) {
        return;
    }
    std::string message =
        "parameter '" + std::string(name) + "' must be " + std::string(describe(type)) + ", not ";
    if (type == ParamType::absolute_path && value.is_string()) {
        message += "the relative path '" + value.get<std::string>() + "'";
    } else if (value.is_number_integer() && value.get<int64_t>() < 0) {
        message += "a negative integer";
    } else if (type == ParamType::uint32 && value.is_number_unsigned()) {
        message += std::to_string(value.get<uint64_t>());
    } else if (type == ParamType::list && value.is_array()) {
        message +=
            "an array holding " +
            std::string(kind_of(*std::find_if_not(value.begin(), value.end(), is_list_item)));
    } else {
        message += kind_of(value);
    }
    invalid(message);
}

void ParamSchema::check(std::string_view method, const json& params) const {
    if (params.is_array() && params.empty()) {
        // By position, nothing: the same as no params at all.
    } else if (!params.is_object()) {
        invalid("params must be an object");
    }
    // Unknown names first: a misspelt name ("port" for "name") is the
    // mistake to report, not the required name it left out.
    if (params.is_object()) {
        for (const auto& item : params.items()) {
            const std::string& name = item.key();
            const bool declared = std::any_of(named.begin(), named.end(),
                                              [&](const ParamSpec& s) { return s.name == name; });
            if (declared) {
                continue;
            }
            const std::optional<ParamType> type = extra != nullptr ? extra(name) : std::nullopt;
            if (!type) {
                invalid(unknown_parameter(method, name, named, takes_note));
            }
            check_param(name, item.value(), *type);
        }
    }
    for (const ParamSpec& spec : named) {
        const auto it = params.find(spec.name);
        if (it == params.end()) {
            if (spec.required) {
                invalid("missing parameter '" + std::string(spec.name) + "' (" +
                        std::string(describe(spec.type)) + ")");
            }
            continue;
        }
        check_param(spec.name, *it, spec.type);
    }
}

}  // namespace vnet::control::rpc
