// libbpf prints its warnings (and the verifier's log on a failed load)
// straight to stderr unless told otherwise. vnetd's stderr carries only
// spdlog lines, so libbpf's output goes to the "libbpf" logger at debug:
// the error that matters is thrown with the errno text by the caller, and
// the details are one --log-level debug away.
#pragma once

namespace vnet::ports {

// Installs the print callback (process-wide, once; later calls do nothing).
void route_libbpf_log();

}  // namespace vnet::ports
