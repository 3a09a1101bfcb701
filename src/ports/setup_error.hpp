// Set-up failures of a port. They are exceptions (DESIGN.md: exceptions only at
// start-up and configuration) whose message names the device, the step that
// failed, the errno text, and what the operator can do about it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace vnet::ports {

class PortSetupError : public std::runtime_error {
public:
    PortSetupError(std::string message, int error_number)
        : std::runtime_error(std::move(message)), errno_(error_number) {}

    // 0 when the error is not a failed system call (e.g. a bad option).
    int error_number() const noexcept { return errno_; }

private:
    int errno_;
};

// `device` names the port as logs do ("tap 'vt1'"). The message reads
// "tap 'vt1': TUNSETIFF failed: Operation not permitted (EPERM); <hint>".
// An empty `hint` picks a generic one for common errnos (EPERM, ENOENT...).
[[noreturn]] void throw_setup_error(std::string_view device, std::string_view step,
                                    int error_number, std::string_view hint = {});

// For option errors found before any system call.
[[noreturn]] void throw_option_error(std::string_view device, std::string_view problem);

}  // namespace vnet::ports
