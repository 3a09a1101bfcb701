#include "ports/tap/xdp_options.hpp"

namespace vnet::ports {

const char* to_string(XdpMode mode) {
    switch (mode) {
        case XdpMode::auto_select:
            return "auto";
        case XdpMode::native:
            return "native";
        case XdpMode::generic:
            return "generic";
    }
    return "unknown";
}

std::optional<XdpMode> parse_xdp_mode(std::string_view text) {
    for (XdpMode m : {XdpMode::auto_select, XdpMode::native, XdpMode::generic}) {
        if (text == to_string(m)) {
            return m;
        }
    }
    return std::nullopt;
}

XdpProgramSpec split_xdp_spec(std::string_view spec) {
    size_t colon = spec.rfind(':');
    if (colon == std::string_view::npos) {
        return {std::string(spec), {}};
    }
    return {std::string(spec.substr(0, colon)), std::string(spec.substr(colon + 1))};
}

}  // namespace vnet::ports
