#include "vhost_user/vring_base_text.hpp"

#include <spdlog/fmt/fmt.h>

namespace vnet::vhost_user {

std::string describe_vring_base(const virtio::RingModel& model, uint32_t base) {
    const virtio::VringBasePositions positions = std::visit(
        [base]<typename R>(std::type_identity<R>) { return R::decode_vring_base(base); }, model);
    std::string text;
    for (const virtio::BasePosition& p : positions.view()) {
        if (!text.empty()) {
            text += ", ";
        }
        text += fmt::format("{} index {}", p.name, p.index);
        if (p.wrap.has_value()) {
            text += fmt::format(" wrap {}", *p.wrap ? 1 : 0);
        }
    }
    return text;
}

}  // namespace vnet::vhost_user
