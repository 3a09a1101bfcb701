#include "common/build_info.hpp"

#include "common/build_info_values.hpp"  // generated (CMakeLists.txt)

namespace vnet::build_info {

std::string_view version() {
    return VNET_BUILD_VERSION;
}

std::string_view commit() {
    return VNET_BUILD_COMMIT;
}

std::string version_line(std::string_view program) {
    return std::string(program) + " " + std::string(version()) + " (commit " +
           std::string(commit()) + ")";
}

}  // namespace vnet::build_info
