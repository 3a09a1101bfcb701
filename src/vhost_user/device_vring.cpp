// VhostUserDevice handlers for one vring: NUM, ADDR, BASE, GET_VRING_BASE,
// KICK, CALL, ERR, ENABLE. Each checks everything before touching the ring.
#include "io/eventfd.hpp"
#include "vhost_user/device.hpp"

namespace vnet::vhost_user {
namespace {

// Reads a VringState and checks its index as the full u32, before any
// narrowing (CVE-2020-10723: an index truncated to u16 passed the check).
MessageError read_vring_state(const Message& m, uint32_t queue_count, VringState* out) {
    m.read_payload(*out);  // size checked by the dispatcher
    return out->index < queue_count ? MessageError::ok : MessageError::vring_index_out_of_range;
}

}  // namespace

MessageError VhostUserDevice::handle_set_vring_num(Message& m, Message&) {
    VringState s;
    if (MessageError e = read_vring_state(m, queue_count(), &s); e != MessageError::ok) {
        return e;
    }
    Queue& q = queues_[s.index];
    // Hostile-input rule 1 / rule 7: no resize of a running ring.
    if (queue_started(q)) {
        return MessageError::ring_running;
    }
    // The format's rule (split: a power of 2 up to 32768; packed: 1 to 32768).
    if (!with_ring_model(
            [&]<typename R>(std::type_identity<R>) { return R::valid_queue_size(s.num); })) {
        return MessageError::vring_num_invalid;
    }
    q.num = s.num;
    q.has_num = true;
    return update_queue(s.index) ? MessageError::ok : MessageError::ring_not_in_guest_memory;
}

MessageError VhostUserDevice::handle_set_vring_base(Message& m, Message&) {
    VringState s;
    if (MessageError e = read_vring_state(m, queue_count(), &s); e != MessageError::ok) {
        return e;
    }
    Queue& q = queues_[s.index];
    // Hostile-input rule 1: the base of a running ring is ours, not the front end's.
    if (queue_started(q)) {
        return MessageError::ring_running;
    }
    // The format's rules (vhost-user.rst SET_VRING_BASE; split: a 16-bit avail
    // index; packed: both positions with their wrap counters, each index below
    // the queue size, so it needs SET_VRING_NUM first).
    const std::optional<uint16_t> size =
        q.has_num ? std::optional<uint16_t>(static_cast<uint16_t>(q.num)) : std::nullopt;
    if (MessageError e = to_message_error(with_ring_model([&]<typename R>(std::type_identity<R>) {
            return R::validate_vring_base(s.num, size);
        }));
        e != MessageError::ok) {
        return e;
    }
    q.base = s.num;
    q.has_base = true;
    return update_queue(s.index) ? MessageError::ok : MessageError::ring_not_in_guest_memory;
}

MessageError VhostUserDevice::handle_set_vring_addr(Message& m, Message&) {
    VringAddr a;
    m.read_payload(a);
    if (a.index >= queue_count()) {
        return MessageError::vring_index_out_of_range;
    }
    // vhost-user.rst SET_VRING_ADDR: bit 0 (LOG: log_guest_addr is where
    // used ring writes are logged) is the only flag.
    if ((a.flags & ~VringAddr::kFlagLog) != 0) {
        return MessageError::vring_addr_flags_invalid;
    }
    if ((a.flags & VringAddr::kFlagLog) != 0 &&
        a.log_guest_addr + virtio::used_ring_bytes(virtio::kMaxQueueSize) < a.log_guest_addr) {
        return MessageError::vring_log_address_overflow;
    }
    // The format's alignment of each area (split: desc 16, avail 2, used 4;
    // packed: descriptor ring 16, the event areas the avail and used
    // addresses name 4).
    const virtio::AreaAlignment align =
        with_ring_model([]<typename R>(std::type_identity<R>) { return R::kAlignment; });
    if (a.desc_user_addr % align.desc != 0 || a.avail_user_addr % align.driver != 0 ||
        a.used_user_addr % align.device != 0) {
        return MessageError::vring_addr_misaligned;
    }
    Queue& q = queues_[a.index];
    if (queue_started(q)) {
        // Only a repeat of the same addresses is harmless on a running ring;
        // QEMU repeats them with the LOG flag when a migration starts or ends.
        const bool same = a.desc_user_addr == q.addr.desc_user_addr &&
                          a.avail_user_addr == q.addr.avail_user_addr &&
                          a.used_user_addr == q.addr.used_user_addr;
        if (!same) {
            return MessageError::ring_running;
        }
        const bool log_changed =
            a.flags != q.addr.flags || a.log_guest_addr != q.addr.log_guest_addr;
        q.addr = a;
        if (log_changed && q.ready && logging()) {
            stop_queue(a.index);  // its snapshot logs at the old address
            return update_queue(a.index) ? MessageError::ok
                                         : MessageError::ring_not_in_guest_memory;
        }
        return MessageError::ok;
    }
    q.addr = a;
    q.has_addr = true;
    return update_queue(a.index) ? MessageError::ok : MessageError::ring_not_in_guest_memory;
}

MessageError VhostUserDevice::handle_get_vring_base(Message& m, Message& reply) {
    VringState s;
    if (MessageError e = read_vring_state(m, queue_count(), &s); e != MessageError::ok) {
        return e;
    }
    // vhost-user.rst GET_VRING_BASE: stops the ring. The observer returns
    // only once the worker has let go, with its final index.
    stop_queue(s.index);
    Queue& q = queues_[s.index];
    // Hostile-input rule 1: a stopped ring needs NUM, BASE, ADDR and KICK again.
    q.has_num = false;
    q.has_base = false;
    q.has_addr = false;
    q.has_kick = false;
    q.kick.reset();
    // vhost-user.rst GET_VRING_BASE: the base in the format's encoding (the
    // worker's final one, from stop_queue).
    reply.write_payload(VringState{s.index, q.base});
    return MessageError::ok;
}

MessageError VhostUserDevice::take_vring_fd(Message& m, uint32_t* index, UniqueFd* fd) {
    uint64_t value = 0;
    m.read_payload(value);
    // vhost-user.rst SET_VRING_KICK: bits 0-7 index, bit 8 NOFD, the rest reserved.
    if ((value & ~(kVringIndexMask | kVringNoFdFlag)) != 0) {
        return MessageError::vring_reserved_bits_set;
    }
    const uint32_t i = static_cast<uint32_t>(value & kVringIndexMask);
    if (i >= queue_count()) {
        return MessageError::vring_index_out_of_range;
    }
    if (m.fd_count == 1) {  // the dispatcher matched the count to NOFD
        // Hostile-input rule 5: only eventfds, used non-blocking.
        if (!io::is_eventfd(m.fds[0].get())) {
            return MessageError::not_an_eventfd;
        }
        if (!io::set_nonblocking(m.fds[0].get())) {
            return MessageError::fd_setup_failed;
        }
        *fd = m.take_fd(0);
    }
    *index = i;
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_vring_kick(Message& m, Message&) {
    uint32_t index = 0;
    UniqueFd fd;
    if (MessageError e = take_vring_fd(m, &index, &fd); e != MessageError::ok) {
        return e;
    }
    // A ready ring's worker waits on the old fd: stop it, swap, restart.
    stop_queue(index);
    Queue& q = queues_[index];
    q.kick = std::move(fd);
    q.has_kick = true;
    return update_queue(index) ? MessageError::ok : MessageError::ring_not_in_guest_memory;
}

MessageError VhostUserDevice::handle_set_vring_call(Message& m, Message&) {
    uint32_t index = 0;
    UniqueFd fd;
    if (MessageError e = take_vring_fd(m, &index, &fd); e != MessageError::ok) {
        return e;
    }
    Queue& q = queues_[index];
    std::swap(q.call, fd);  // `fd` now holds the old one
    if (q.ready && observer_ != nullptr) {
        // Barrier: the worker switches before the old fd is closed below.
        observer_->on_call_fd_changed(*this, index, q.call.get());
    }
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_vring_err(Message& m, Message&) {
    uint32_t index = 0;
    UniqueFd fd;
    if (MessageError e = take_vring_fd(m, &index, &fd); e != MessageError::ok) {
        return e;
    }
    queues_[index].err = std::move(fd);  // kept, never written: we report errors by breaking
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_vring_enable(Message& m, Message&) {
    VringState s;
    if (MessageError e = read_vring_state(m, queue_count(), &s); e != MessageError::ok) {
        return e;
    }
    // vhost-user.rst SET_VRING_ENABLE: num is 0 (disable) or 1 (enable).
    if (s.num > 1) {
        return MessageError::vring_enable_value_invalid;
    }
    queues_[s.index].enabled = s.num == 1;
    return update_queue(s.index) ? MessageError::ok : MessageError::ring_not_in_guest_memory;
}

}  // namespace vnet::vhost_user
