// DirtyLog: the live-migration dirty log a front end shares with us
// (vhost-user.rst "Migration", SET_LOG_BASE): a bitmap with one bit per
// 4 KiB guest-physical page, page n at bit n % 8 of byte n / 8. While the
// front end has VHOST_F_LOG_ALL on, every guest page we write must be marked
// here, after the write, so that it is copied (again) to the destination.
//
// One log serves every queue of a device, and so several workers at once:
// marks are atomic ORs (the front end clears bits concurrently with atomic
// exchanges). Pure and syscall-free: the mapping is made by vhost_user and
// kept alive by `mapping`.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace vnet::virtio {

class DirtyLog {
public:
    // VHOST_LOG_PAGE: the log's granularity, whatever the guest's page size.
    static constexpr uint64_t kPageSize = 4096;

    DirtyLog(uint8_t* bitmap, uint64_t size_bytes, std::shared_ptr<const void> mapping)
        : bitmap_(bitmap), size_bytes_(size_bytes), mapping_(std::move(mapping)) {}

    // Marks every page that [gpa, gpa + len) touches. Pages the bitmap does
    // not cover (a front end that sized its log too small, or a range that
    // wraps) are not marked but counted: the migration would copy them
    // stale, and pages_beyond() is how an operator finds out.
    void mark(uint64_t gpa, uint64_t len) const;

    uint64_t size_bytes() const { return size_bytes_; }
    // The highest guest-physical address + 1 the log covers.
    uint64_t covered_bytes() const { return size_bytes_ * 8 * kPageSize; }
    uint64_t pages_beyond() const { return pages_beyond_.load(std::memory_order_relaxed); }
    // Whether `address` lies in the bitmap: a SIGBUS there means the front
    // end shrank the log under us (VhostUserPort::on_guest_fault).
    bool holds(uintptr_t address) const {
        return address - reinterpret_cast<uintptr_t>(bitmap_) < size_bytes_;
    }
    const uint8_t* bitmap() const { return bitmap_; }

private:
    uint8_t* bitmap_;
    uint64_t size_bytes_;
    std::shared_ptr<const void> mapping_;
    mutable std::atomic<uint64_t> pages_beyond_{0};
};

}  // namespace vnet::virtio
