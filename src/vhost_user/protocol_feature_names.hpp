// vhost-user protocol feature names as vhost-user.rst spells them
// (VHOST_USER_PROTOCOL_F_REPLY_ACK), for `vnetctl show`; decode a whole
// word with virtio::bit_names(bits, protocol_feature_name).
#pragma once

#include <string_view>

namespace vnet::vhost_user {

// Empty for a bit vhost-user.rst does not define.
std::string_view protocol_feature_name(unsigned bit);

}  // namespace vnet::vhost_user
