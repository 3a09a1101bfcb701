#include "vhost_user/memory_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdint>

namespace vnet::vhost_user {
namespace {

std::atomic<int64_t> g_live_mappings{0};

// Mapping granularity: the fd's block size when it is a power of two at least
// a page (hugetlbfs reports the huge page size and refuses anything finer),
// as DPDK's vhost_user_mmap_region does.
uint64_t mapping_alignment(const struct stat& st) {
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t block = st.st_blksize > 0 ? static_cast<uint64_t>(st.st_blksize) : page;
    return std::has_single_bit(block) && block >= page ? block : page;
}

MessageError check_region_addresses(const MemoryRegionDesc& d) {
    if (d.memory_size == 0) {
        return MessageError::mem_region_zero_size;
    }
    // vhost-user.rst memory region description: gpa/uva ranges must not wrap.
    if (d.guest_phys_addr + d.memory_size < d.guest_phys_addr ||
        d.userspace_addr + d.memory_size < d.userspace_addr) {
        return MessageError::mem_region_address_overflow;
    }
    // Hostile-input rule 4 (CVE-2020-10722 class): offset + size must not wrap.
    if (d.mmap_offset + d.memory_size < d.mmap_offset) {
        return MessageError::mem_region_offset_overflow;
    }
    return MessageError::ok;
}

}  // namespace

MessageError map_memory_region(const MemoryRegionDesc& desc, int fd, virtio::GuestRegion* out) {
    if (MessageError e = check_region_addresses(desc); e != MessageError::ok) {
        return e;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        // Never map a device node or anything else that is not plain memory.
        return MessageError::mem_region_not_a_file;
    }
    // Hostile-input rule 4: the region must lie inside the file, or touching
    // it is SIGBUS. (st_size is non-negative for regular files.)
    const uint64_t file_size = static_cast<uint64_t>(st.st_size);
    if (desc.mmap_offset > file_size || desc.memory_size > file_size - desc.mmap_offset) {
        return MessageError::mem_region_beyond_file;
    }
    // Hostile-input rule 4: a front end that seals must seal against shrinking.
    // (A memfd created without MFD_ALLOW_SEALING reports F_SEAL_SEAL alone:
    // that is "cannot seal", not a choice to allow shrinking.)
    const int seals = ::fcntl(fd, F_GET_SEALS);
    if (seals > 0 && (seals & ~F_SEAL_SEAL) != 0 && (seals & F_SEAL_SHRINK) == 0) {
        return MessageError::mem_region_not_sealed_against_shrink;
    }

    const uint64_t align = mapping_alignment(st);
    const uint64_t map_offset = desc.mmap_offset & ~(align - 1);
    const uint64_t lead = desc.mmap_offset - map_offset;  // applied exactly once, below
    const uint64_t map_length = (lead + desc.memory_size + align - 1) & ~(align - 1);
    if (map_length < desc.memory_size || map_offset > static_cast<uint64_t>(INT64_MAX)) {
        return MessageError::mem_region_offset_overflow;
    }
    void* base = ::mmap(nullptr, map_length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
                        static_cast<off_t>(map_offset));
    if (base == MAP_FAILED) {
        return MessageError::mem_region_map_failed;
    }
    g_live_mappings.fetch_add(1, std::memory_order_relaxed);
    std::shared_ptr<const void> mapping(base, [map_length](const void* p) {
        ::munmap(const_cast<void*>(p), map_length);
        g_live_mappings.fetch_sub(1, std::memory_order_relaxed);
    });

    out->guest_phys_addr = desc.guest_phys_addr;
    out->size = desc.memory_size;
    out->user_addr = desc.userspace_addr;
    out->mmap_offset = desc.mmap_offset;
    out->host_addr = static_cast<uint8_t*>(base) + lead;
    out->mapping = std::move(mapping);
    return MessageError::ok;
}

int64_t live_memory_mappings() {
    return g_live_mappings.load(std::memory_order_relaxed);
}

}  // namespace vnet::vhost_user
