#include "frontend/driver_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace vnet::frontend {
namespace {

[[noreturn]] void throw_errno(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

size_t round_up(size_t value, size_t align) {
    return (value + align - 1) & ~(align - 1);
}

}  // namespace

DriverMemory::DriverMemory(size_t size_bytes) {
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    // Back ends map whole pages (DPDK rounds to st_blksize): a file that ends
    // mid-page would let them touch bytes past EOF and take a SIGBUS.
    size_ = round_up(size_bytes == 0 ? page : size_bytes, page);

    fd_.reset(::memfd_create("vnet-driver-memory", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!fd_) {
        throw_errno("memfd_create");
    }
    if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) {
        throw_errno("ftruncate(memfd)");
    }
    // Populate now: the first touch of a page must not happen in the
    // datapath, and a short memfd would fail here rather than later.
    void* p =
        ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_.get(), 0);
    if (p == MAP_FAILED) {
        throw_errno("mmap(memfd)");
    }
    base_ = static_cast<std::byte*>(p);
    // The back end maps the whole file: a size change under it would turn
    // its accesses into SIGBUS, so the size is fixed for good.
    if (::fcntl(fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
        const int saved = errno;
        ::munmap(base_, size_);
        errno = saved;
        throw_errno("fcntl(F_ADD_SEALS)");
    }
}

DriverMemory::~DriverMemory() {
    if (base_ != nullptr) {
        ::munmap(base_, size_);
    }
}

std::span<std::byte> DriverMemory::allocate(size_t size, size_t align) {
    if (align == 0 || (align & (align - 1)) != 0) {
        throw std::invalid_argument("DriverMemory::allocate: alignment must be a power of two");
    }
    const size_t start = round_up(next_, align);
    if (start > size_ || size > size_ - start) {
        throw std::length_error("DriverMemory: out of memory (" + std::to_string(size) +
                                " bytes wanted, " + std::to_string(size_ - next_) + " left)");
    }
    next_ = start + size;
    // Fresh memfd pages are zero already; the memset keeps that promise if
    // the allocator ever reuses memory.
    std::memset(base_ + start, 0, size);
    return {base_ + start, size};
}

bool DriverMemory::contains(const void* p, size_t len) const {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= base_ && len <= size_ && b <= base_ + (size_ - len);
}

vhost_user::MemoryRegionDesc DriverMemory::region() const {
    const uint64_t addr = gpa_of(base_);
    return vhost_user::MemoryRegionDesc{
        .guest_phys_addr = addr, .memory_size = size_, .userspace_addr = addr, .mmap_offset = 0};
}

}  // namespace vnet::frontend
