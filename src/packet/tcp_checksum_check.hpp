// Whether a received frame's TCP checksum is right: what a source that
// read a frame off the wire (not from a guest or a tap, which say so in
// their virtio-net header) checks before it may tell the receivers so
// (VIRTIO_NET_HDR_F_DATA_VALID). Only then may GRO merge the frame: a
// merged frame's checksum is computed anew, and would hide a bad one.
#pragma once

#include <cstdint>

namespace vnet::packet {

// True for a TCP segment in plain Ethernet (no VLAN tag) over IPv4 without
// options and not a fragment, or over IPv6 with TCP as the next header,
// whose IP length fits in `len` bytes (Ethernet padding may follow) and
// whose TCP checksum, over the pseudo header and the IP length's L4 bytes,
// verifies. False for everything else: not checked, or wrong. Reads no
// byte past `frame + len`; trusts no length field.
bool tcp_checksum_verifies(const uint8_t* frame, uint32_t len);

}  // namespace vnet::packet
