// Maps one front-end memory region (SET_MEM_TABLE / ADD_MEM_REG) into our
// process, after checking everything the front end told us about it.
#pragma once

#include <cstdint>

#include "vhost_user/message.hpp"
#include "vhost_user/message_error.hpp"
#include "virtio/guest_memory.hpp"

namespace vnet::vhost_user {

// Validates `desc` against the fd (a regular file: memfd, hugetlbfs, tmpfs;
// big enough for mmap_offset + memory_size, computed without overflow; if the
// front end seals it, F_SEAL_SHRINK must be among the seals) and maps it
// MAP_SHARED. On ok, *out is a complete GuestRegion whose `mapping` unmaps on
// last release; the fd itself is not kept (the mapping holds the file).
// On error nothing stays mapped.
MessageError map_memory_region(const MemoryRegionDesc& desc, int fd, virtio::GuestRegion* out);

// Guest memory mappings alive in this process (for leak checks in tests and
// the fuzzer, and as a gauge).
int64_t live_memory_mappings();

}  // namespace vnet::vhost_user
