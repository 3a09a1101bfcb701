// Where an XDP program's object file is found. A FILE with a '/' is used as
// written. A bare name is taken from the working directory if it is there
// (as it always was), else from the directories vnetd's own programs
// (bpf/) are in: installed, <binary's directory>/VNET_BPF_DIR_FROM_BINARY
// (e.g. /usr/sbin/../lib/vnetd/bpf, so an install under any prefix or
// DESTDIR finds its own); in the build tree, <build>/bpf beside
// <build>/apps/vnetd. A shipped program may be named without its suffix:
// `xdp_drop` is xdp_drop.bpf.o.
#pragma once

#include <string>
#include <vector>

namespace vnet::ports {

// The directories a bare name is looked for in, in order (without the
// working directory).
std::vector<std::string> shipped_xdp_object_dirs();

// The file to open for `file`; `file` itself when nothing is found (the
// open then fails naming it).
std::string find_xdp_object(const std::string& file);

}  // namespace vnet::ports
