// A config file's text loaded as vnetd would load it (a temporary file,
// load_config_file): the error it is refused with, without the file's path
// prefix, or "" if it loads (and then the config, when asked).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "control/config/config.hpp"

namespace vnet::control::test {

inline std::string config_file_error(const std::string& text, Config* out = nullptr) {
    char path[] = "/tmp/vnet_config_test.XXXXXX";
    const int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << text;
    std::string error;
    try {
        Config c = load_config_file(path);
        if (out != nullptr) {
            *out = c;
        }
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        const std::string prefix = std::string(path) + ": ";
        error = what.starts_with(prefix) ? what.substr(prefix.size()) : what;
    }
    ::unlink(path);
    return error;
}

}  // namespace vnet::control::test
