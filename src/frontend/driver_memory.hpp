// DriverMemory: the "guest RAM" of our stand-in VM. One memfd, mapped shared
// into this process and handed to the back end with SET_MEM_TABLE, so the
// back end sees exactly the bytes we write. Rings and packet buffers are
// carved out of it by a bump allocator; nothing is ever freed piecemeal
// (the driver allocates everything at start-up, like a virtio-net probe).
//
// Addressing follows DPDK virtio-user: guest-physical address == our
// virtual address, so descriptors, SET_VRING_ADDR and the memory table all
// carry plain pointers and no translation is needed on our side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/unique_fd.hpp"
#include "vhost_user/message.hpp"

namespace vnet::frontend {

class DriverMemory {
public:
    // Creates, sizes (rounded up to whole pages), maps and seals the memfd.
    // Throws std::system_error on failure (start-up only).
    explicit DriverMemory(size_t size_bytes);
    ~DriverMemory();
    DriverMemory(const DriverMemory&) = delete;
    DriverMemory& operator=(const DriverMemory&) = delete;

    // Returns `size` zeroed bytes aligned to `align` (a power of two).
    // Throws std::length_error when the memory is exhausted.
    std::span<std::byte> allocate(size_t size, size_t align);

    template <typename T>
    T* allocate_as(size_t size, size_t align) {
        return reinterpret_cast<T*>(allocate(size, align).data());
    }

    // The guest-physical address of a byte inside this memory (== its VA).
    uint64_t gpa_of(const void* p) const { return reinterpret_cast<uintptr_t>(p); }
    bool contains(const void* p, size_t len) const;

    std::byte* base() const { return base_; }
    size_t size() const { return size_; }
    size_t used_bytes() const { return next_; }
    int fd() const { return fd_.get(); }

    // The single SET_MEM_TABLE region describing this memory (mmap offset 0).
    vhost_user::MemoryRegionDesc region() const;

private:
    UniqueFd fd_;
    std::byte* base_ = nullptr;
    size_t size_ = 0;
    size_t next_ = 0;
};

}  // namespace vnet::frontend
