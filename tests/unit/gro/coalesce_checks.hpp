// Test-only: the invariants every coalesce() result must keep, whatever the
// input. Shared by the property tests.
#pragma once

#include <string>
#include <vector>

#include "gro/burst_coalescer.hpp"
#include "segment_factory.hpp"

namespace vnet::gro::testing {

// Checks `out` against `in`: (a) frames cover the input packets once, in
// order (source_packets); (b) a merged frame, split by the reference GSO
// segmenter, gives back its source packets byte for byte (DATA_VALID
// sources: after completing the checksum; the GSO_NONE hints hdr_len and
// gso_size ignored); (c) a frame of one source is that packet's iovecs, len
// and token, unchanged; (d) merged frames hold at most 65535 IP bytes, their
// header iovec is not guest memory and their payload iovecs are. Returns ""
// or the first violation.
std::string check_coalesced(const TestBurst& in, uint16_t vnet_len, const BurstCoalescer& coalescer,
                            const CoalesceResult& result, const packet::PacketBurst& out);

// Source packets per frame, e.g. {45, 19}.
std::vector<uint16_t> frame_sizes(const BurstCoalescer& coalescer, const CoalesceResult& result);

}  // namespace vnet::gro::testing
