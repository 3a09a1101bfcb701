// port add's --KEY VALUE words: the [[port]] keys are vnetd's, read from it
// (options.list, the rows of its option table), not a list kept here, so a
// key a newer vnetd takes needs no newer vnetctl.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vnet::vnetctl {

// The words after KIND NAME (--KEY VALUE, --KEY=VALUE, or an on|off --KEY
// alone for "on") into `params` by `rows` (options.list {scope: port}).
// Throws std::invalid_argument saying which word is wrong and why.
void add_key_words(const nlohmann::json& rows, const std::vector<std::string>& words,
                   nlohmann::json& params);

// What `port add --help` says after its options: the keys of the vnetd at
// `socket`, or, when none answers, that they could not be listed and where
// they are written down.
std::string port_keys_help(const std::string& socket);

}  // namespace vnet::vnetctl
