// VhostUserDevice and restart without a guest reboot (vhost-user.rst
// "Inflight I/O tracking", VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD): the shared
// buffer where each ring records the chains it took and has not completed,
// so that the next back end, after a crash, resubmits them. Split rings
// (SplitInflight) and packed rings (PackedInflight) each have the spec's
// region layout; a buffer has the layout of the ring format negotiated when
// it came (DPDK's rule), and SET_FEATURES may not change the format under it.
//
// GET_INFLIGHT_FD: we allocate the buffer (a memfd, sealed so nobody can
// shrink it under a mapping), initialise every queue region and hand its fd
// to the front end, which keeps it. A second GET replaces the first: the old
// mapping goes with the last ring that held it, and its fd was the front
// end's to close (CVE-2020-10726: nothing of ours is left behind).
// SET_INFLIGHT_FD: the front end hands a buffer back after reconnecting,
// before the rings are set up; it is mapped with the checks of guest memory.
// At ring start (update_queue) the ring's region is recovered and what is
// still in flight goes to the dataplane with the snapshot. A packed region
// also says where the ring is (used position; avail after what it
// resubmits): it replaces the vring base, which a front end cannot know
// after a crash (QEMU keeps the last one it read), as DPDK's
// rte_vhost_get_vring_base_from_inflight does. Not so for a region our GET
// just made: the base stands and the region starts from it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <string>
#include <utility>

#include "common/guest_fault.hpp"
#include "vhost_user/device.hpp"
#include "vhost_user/memory_region.hpp"
#include "virtio/inflight/inflight_layout.hpp"

namespace vnet::vhost_user {
namespace {

constexpr int kInflightSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// A fresh, sealed memfd of `size` bytes, mapped. False if any step fails.
bool allocate_inflight_memfd(uint64_t size, UniqueFd* fd, std::shared_ptr<const void>* mapping,
                             uint8_t** base) {
    UniqueFd memfd(::memfd_create("vnetd-inflight", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!memfd.valid() || ::ftruncate(memfd.get(), static_cast<off_t>(size)) != 0 ||
        ::fcntl(memfd.get(), F_ADD_SEALS, kInflightSeals) != 0) {
        return false;
    }
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get(), 0);
    if (p == MAP_FAILED) {
        return false;
    }
    *mapping = std::shared_ptr<const void>(
        p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
    *base = static_cast<uint8_t*>(p);
    *fd = std::move(memfd);
    return true;
}

}  // namespace

MessageError VhostUserDevice::check_inflight_request(const InflightDescription& d) const {
    // CVE-2021-3839: num_queues indexes our rings; it may not exceed them.
    if (d.num_queues == 0 || d.num_queues > queue_count()) {
        return MessageError::inflight_num_queues_invalid;
    }
    // The format's rule, as SET_VRING_NUM's. Before SET_FEATURES the
    // format is split (no feature selects another), as DPDK sizes it.
    if (!with_ring_model(
            [&]<typename R>(std::type_identity<R>) { return R::valid_queue_size(d.queue_size); })) {
        return MessageError::inflight_queue_size_invalid;
    }
    // The rings take their regions when they start: the buffer is set first.
    if (any_queue_started()) {
        return MessageError::ring_running;
    }
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_get_inflight_fd(Message& m, Message& reply) {
    InflightDescription d;
    m.read_payload(d);
    if (MessageError e = check_inflight_request(d); e != MessageError::ok) {
        return e;
    }
    auto area = std::make_shared<InflightArea>();
    area->num_queues = d.num_queues;
    area->queue_size = d.queue_size;
    area->model = ring_model();
    const uint64_t stride = area->stride();
    area->size = uint64_t{d.num_queues} * stride;
    UniqueFd fd;
    if (!allocate_inflight_memfd(area->size, &fd, &area->mapping, &area->base)) {
        return MessageError::inflight_alloc_failed;
    }
    for (uint16_t i = 0; i < d.num_queues; ++i) {
        uint8_t* region = area->base + i * stride;
        std::visit([&]<typename R>(
                       std::type_identity<R>) { R::init_inflight_region(region, d.queue_size); },
                   area->model);
    }
    inflight_ = std::move(area);  // a previous buffer is unmapped with its last holder
    for (uint32_t i = 0; i < queues_.size(); ++i) {
        queues_[i].inflight_fresh = i < d.num_queues;
    }
    log_->info("inflight buffer allocated: {} {} queues of {} entries, {} bytes", d.num_queues,
               virtio::format_name(inflight_->model), d.queue_size, inflight_->size);
    reply.write_payload(InflightDescription{inflight_->size, 0, d.num_queues, d.queue_size, 0});
    reply.fds[0] = std::move(fd);
    reply.fd_count = 1;
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_inflight_fd(Message& m, Message&) {
    InflightDescription d;
    m.read_payload(d);
    if (MessageError e = check_inflight_request(d); e != MessageError::ok) {
        return e;
    }
    const uint64_t stride = with_ring_model(
        [&]<typename R>(std::type_identity<R>) { return R::inflight_queue_bytes(d.queue_size); });
    if (d.mmap_size < uint64_t{d.num_queues} * stride) {
        return MessageError::inflight_region_too_small;
    }
    // The regions hold u64 fields we access atomically.
    if (d.mmap_offset % virtio::kInflightAlignment != 0) {
        return MessageError::inflight_region_misaligned;
    }
    const int fd = m.fds[0].get();
    // Hostile-input rule 4: a buffer the front end could shrink would fault
    // the dataplane. Ours (GET) are sealed; so must be what comes back.
    const int seals = ::fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
        return MessageError::inflight_not_sealed_against_shrink;
    }
    // As guest memory and the dirty log (CVE-2020-10722): a regular file,
    // offset + size inside it, computed without wrapping.
    const MemoryRegionDesc desc{0, d.mmap_size, 0, d.mmap_offset};
    virtio::GuestRegion mapped;
    if (MessageError e = map_memory_region(desc, fd, &mapped); e != MessageError::ok) {
        return e;
    }
    auto area = std::make_shared<InflightArea>();
    area->mapping = std::move(mapped.mapping);
    area->base = mapped.host_addr;
    area->size = d.mmap_size;
    area->num_queues = d.num_queues;
    area->queue_size = d.queue_size;
    area->model = ring_model();
    inflight_ = std::move(area);
    for (Queue& q : queues_) {
        q.inflight_fresh = false;  // a previous back end's: the region says where the rings are
    }
    log_->info("inflight buffer set: {} {} queues of {} entries", d.num_queues,
               virtio::format_name(inflight_->model), d.queue_size);
    return MessageError::ok;
}

}  // namespace vnet::vhost_user
