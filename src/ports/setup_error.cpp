#include "ports/setup_error.hpp"

#include <cerrno>
#include <cstring>

namespace vnet::ports {
namespace {

std::string_view generic_hint(int error_number) {
    switch (error_number) {
        case EPERM:
        case EACCES:
            return "needs CAP_NET_ADMIN: run vnetd as root or grant it the capability";
        case ENOENT:
            return "is the tun module loaded? (modprobe tun; /dev/net/tun must exist)";
        case ENODEV:
            return "no such network device in this network namespace (was it moved or deleted?)";
        default:
            return {};
    }
}

}  // namespace

void throw_setup_error(std::string_view device, std::string_view step, int error_number,
                       std::string_view hint) {
    std::string message =
        std::string(device) + ": " + std::string(step) + " failed: " + std::strerror(error_number);
    if (const char* name = strerrorname_np(error_number)) {
        message += " (" + std::string(name) + ")";
    }
    if (hint.empty()) {
        hint = generic_hint(error_number);
    }
    if (!hint.empty()) {
        message += "; " + std::string(hint);
    }
    throw PortSetupError(std::move(message), error_number);
}

void throw_option_error(std::string_view device, std::string_view problem) {
    throw PortSetupError(std::string(device) + ": " + std::string(problem), 0);
}

}  // namespace vnet::ports
