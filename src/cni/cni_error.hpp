// CniError: the error a CNI plugin reports, as SPEC.md "Error" has it: a
// code (the spec's well-known ones below), a message and optional details,
// printed as JSON on stdout with a non-zero exit.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace vnet::cni {

// CNI SPEC 1.1 "Error": codes 1-99 are reserved for the well-known errors.
enum class ErrorCode : int {
    incompatible_version = 1,
    unsupported_field = 2,
    unknown_container = 3,
    invalid_environment = 4,
    io_failure = 5,
    decode_failure = 6,
    invalid_config = 7,
    try_again_later = 11,
    plugin_not_available = 50,
    // 100 and up are the plugin's own.
    vnetd_refused = 100,      // vnetd answered a port request with an error
    attachment_broken = 101,  // CHECK: a part of the attachment is missing
};

struct CniError : std::runtime_error {
    CniError(ErrorCode c, const std::string& msg, std::string det = "")
        : std::runtime_error(msg), code(c), details(std::move(det)) {}
    // An error passed through from a delegated plugin keeps its code.
    CniError(int raw, const std::string& msg, std::string det = "")
        : std::runtime_error(msg), code(static_cast<ErrorCode>(raw)), details(std::move(det)) {}

    ErrorCode code;
    std::string details;
};

// {"cniVersion", "code", "msg", "details"?}
nlohmann::json error_json(const CniError& e, const std::string& cni_version);

}  // namespace vnet::cni
