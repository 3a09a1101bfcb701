// The contract between a VhostUserDevice (control thread) and the dataplane.
//
// A queue is READY when the front end has set it up completely (SET_VRING_NUM,
// SET_VRING_BASE, SET_VRING_ADDR and SET_VRING_KICK since the last stop), its
// three areas translated into guest memory, SET_FEATURES was received, and it
// is enabled (SET_VRING_ENABLE 1, or implicitly when PROTOCOL_FEATURES was not
// acked). Only a ready queue may be touched by the dataplane.
//
// All callbacks run on the control thread, from inside
// VhostUserDevice::handle_message (or its destructor / mark_broken), and are
// BARRIERS: when one returns, the dataplane must already behave as it says.
//
//   on_queue_ready(device, q)     q became ready. Take device.queue_snapshot(q)
//                                 (a value: the ring, fds, memory map)
//                                 and hand it to the worker that owns q.
//   on_queue_stopped(device, q)   q is no longer ready: GET_VRING_BASE, disable,
//                                 a memory-table change (then ready again with
//                                 a new snapshot), new kick fd, RESET_OWNER,
//                                 broken device, disconnect. Before returning,
//                                 the worker must have stopped touching the
//                                 ring and dropped its snapshot, published
//                                 every used entry it completed, given back
//                                 heads it did not finish (rewind), and the
//                                 return value is its final vring base in the
//                                 ring format's encoding (split: the 16-bit
//                                 last avail index; packed: vhost-user's
//                                 32-bit avail/used index and wrap counters).
//                                 GET_VRING_BASE replies with exactly that
//                                 value, so the reply is built only after the
//                                 worker let go.
//   on_call_fd_changed(device, q, fd)  SET_VRING_CALL on a ready queue (QEMU
//                                 does this while running when it masks
//                                 vectors). From return on, the worker uses
//                                 `fd` (-1: do not notify); the old fd is
//                                 closed right after the call returns.
//   on_rarp_requested(device, mac)  SEND_RARP: the dataplane should send one
//                                 RARP announcement for `mac` from this port.
//
// The fds in a snapshot stay open while the queue is ready (kick) or until
// on_call_fd_changed/on_queue_stopped (call). The memory map is a shared
// snapshot: holding it keeps every region mapped, so a worker never touches
// unmapped memory even while a new table is being published.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "packet/wire.hpp"
#include "virtio/features.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/log/queue_log.hpp"
#include "virtio/ring/any_device_ring.hpp"

namespace vnet::vhost_user {

class VhostUserDevice;

using MacAddress = packet::MacAddress;

// A mapping of a front-end fd, kept alive by `owner`, with where it lies:
// a SIGBUS address is matched against it to say which mapping faulted.
struct MappedArea {
    std::shared_ptr<const void> owner;
    const uint8_t* base = nullptr;
    uint64_t size = 0;
    bool holds(uintptr_t address) const {
        return address - reinterpret_cast<uintptr_t>(base) < size;
    }
};

struct QueueSnapshot {
    uint32_t index = 0;  // virtqueue index: 2*pair is RX (to the guest), 2*pair+1 is TX
    // The ring, built by the device in the negotiated format over the areas
    // it translated and validated, at the vring base (split: at the guest's
    // used->idx), translating through `memory`. While an inflight buffer
    // covers it (INFLIGHT_SHMFD) it tracks its chains and first hands out
    // the `inflight_resumed` ones a previous back end took and never
    // completed; `inflight_mapping` keeps that buffer mapped and says where
    // it lies.
    virtio::AnyDeviceRing ring;
    uint32_t vring_base = 0;  // the base it starts from, in the format's encoding
    uint32_t inflight_resumed = 0;
    MappedArea inflight_mapping;
    virtio::FeatureSet features;  // negotiated (SET_FEATURES)
    int kick_fd = -1;             // -1: the front end never kicks (NOFD): poll the ring
    int call_fd = -1;             // -1: no call fd: do not notify
    std::shared_ptr<const virtio::GuestMemoryMap> memory;
    // While the front end logs (SET_LOG_BASE and VHOST_F_LOG_ALL): the log,
    // and where this ring's device-written areas lie in guest-physical
    // addresses. Null otherwise: the queue then pays nothing for logging.
    std::shared_ptr<const virtio::DirtyLog> dirty_log;
    virtio::RingLogAreas log_areas;
};

class QueueObserver {
public:
    virtual ~QueueObserver() = default;

    virtual void on_queue_ready(VhostUserDevice& device, uint32_t queue_index) = 0;
    // Returns the worker's final vring base (see above).
    virtual uint32_t on_queue_stopped(VhostUserDevice& device, uint32_t queue_index) = 0;
    virtual void on_call_fd_changed(VhostUserDevice& device, uint32_t queue_index, int call_fd) = 0;
    virtual void on_rarp_requested(VhostUserDevice& /*device*/, const MacAddress& /*mac*/) {}
};

}  // namespace vnet::vhost_user
