// The words an operator uses for XDP on a tap, shared by the config file,
// the command line and the loader (ports/tap/tap_xdp.hpp), so each is parsed and
// spelled in one place: "FILE[:SECTION]" and the attach mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vnet::ports {

// Where the program runs in the kernel (reference/kernel-datapath.md row 6).
//  native:  XDP_FLAGS_DRV_MODE, tun's own hook on its build_skb path: the
//           frame is judged before an skb exists (fast).
//  generic: XDP_FLAGS_SKB_MODE, run on an skb after it was built; slower
//           than no XDP at all (reference/peer-baselines.md).
//  auto:    native, and generic if the device refuses native.
enum class XdpMode : uint8_t { auto_select, native, generic };

// "auto", "native", "generic": the config key's spelling.
const char* to_string(XdpMode mode);
std::optional<XdpMode> parse_xdp_mode(std::string_view text);

// "FILE[:SECTION]", split at the last ':'. An empty SECTION (also a spec
// ending in ':', the way to name a FILE that itself contains ':') means the
// object's first XDP program.
struct XdpProgramSpec {
    std::string file;
    std::string section;
};
XdpProgramSpec split_xdp_spec(std::string_view spec);

}  // namespace vnet::ports
