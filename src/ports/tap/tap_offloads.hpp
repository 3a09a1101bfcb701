// Which offloads the tap may hand us (TUNSETOFFLOAD), derived from what the
// guest accepts on its RX side (VIRTIO_NET_F_GUEST_*). TUNSETOFFLOAD declares
// what the *reader* of the tap accepts: with TUN_F_TSO4 set, the host stack may
// send us 64 KB TCP frames with a GSO vnet header, which we pass to the guest
// unchanged, so a bit may only be set when the guest negotiated its GUEST_*
// twin (reference/kernel-datapath.md §1 row 14, §3.2).
//
// Pure: no syscalls. TapDevice::set_offloads applies the result.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "virtio/features.hpp"

namespace vnet::ports {

// TUNSETOFFLOAD bits (include/uapi/linux/if_tun.h), as bit numbers: TUN_F_CSUM
// is 1 << 0 and so on. Spelled out here because Debian 12's kernel headers
// predate TUN_F_USO4/6 (Linux 6.2).
enum class TunOffload : uint8_t {
    csum = 0,     // TUN_F_CSUM 0x01: reader accepts CHECKSUM_PARTIAL (NEEDS_CSUM) frames
    tso4 = 1,     // TUN_F_TSO4 0x02
    tso6 = 2,     // TUN_F_TSO6 0x04
    tso_ecn = 3,  // TUN_F_TSO_ECN 0x08
    ufo = 4,      // TUN_F_UFO 0x10: accepted by tun, then masked off (no UFO since 4.14)
    uso4 = 5,     // TUN_F_USO4 0x20: honoured only together with USO6
    uso6 = 6,     // TUN_F_USO6 0x40
};

// A typed set of TUN_F_* bits; bits() is the TUNSETOFFLOAD argument.
using TunOffloads = virtio::BitSet<TunOffload, unsigned>;

// The QEMU rule (hw/net/virtio-net.c virtio_net_apply_guest_offloads ->
// net/tap-linux.c tap_fd_set_offload), tightened to what tun.c accepts:
//   GUEST_CSUM -> csum; everything else needs GUEST_CSUM too, because every
//     TSO/USO bit without TUN_F_CSUM is left over in tun's set_offload and
//     returns EINVAL;
//   GUEST_TSO4 -> tso4, GUEST_TSO6 -> tso6;
//   GUEST_ECN -> tso_ecn, only with tso4 or tso6 (tun only consumes the ECN
//     bit inside its TSO branch; alone it is EINVAL);
//   GUEST_UFO -> ufo;
//   GUEST_USO4 + GUEST_USO6 -> uso4|uso6, only both ("for now USO4 and USO6
//     should work simultaneously" in tun.c; one alone is EINVAL).
// Host-side features (HOST_TSO4, CSUM, ...) describe the other direction and
// are ignored.
TunOffloads tun_offloads_for_guest(virtio::FeatureSet negotiated);

// The sequence TapDevice::set_offloads tries when the kernel refuses a bit
// with EINVAL (how TUNSETOFFLOAD reports an unknown bit): first `wanted`, then
// without USO (kernels before 6.2), then also without UFO (QEMU's order).
// Entries may repeat when a bit was not wanted in the first place.
std::array<TunOffloads, 3> tun_offload_fallbacks(TunOffloads wanted);

// "csum|tso4|tso6" for logs and tools; "none" for the empty set.
std::string to_string(TunOffloads offloads);

}  // namespace vnet::ports
