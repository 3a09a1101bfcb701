// VhostUserDevice handlers for the memory table: SET_MEM_TABLE builds a new
// map from scratch; ADD/REM_MEM_REG derive a new map from the current one.
// Either way the new map is complete and checked before it is published, and
// workers keep their old snapshot (and its mappings) until they let go.
#include <cstring>

#include "vhost_user/device.hpp"
#include "vhost_user/memory_region.hpp"

namespace vnet::vhost_user {
namespace {

MessageError from_memory_error(virtio::MemoryError e) {
    switch (e) {
        case virtio::MemoryError::ok:
            return MessageError::ok;
        case virtio::MemoryError::zero_size:
            return MessageError::mem_region_zero_size;
        case virtio::MemoryError::address_overflow:
            return MessageError::mem_region_address_overflow;
        case virtio::MemoryError::null_host_address:
            return MessageError::mem_region_map_failed;
        case virtio::MemoryError::overlaps_existing:
            return MessageError::mem_regions_overlap;
        case virtio::MemoryError::too_many_regions:
            return MessageError::mem_too_many_regions;
        case virtio::MemoryError::no_such_region:
            return MessageError::mem_region_not_found;
    }
    return MessageError::mem_region_map_failed;
}

}  // namespace

MessageError VhostUserDevice::handle_set_mem_table(Message& m, Message&) {
    // The dispatcher checked 1 <= nregions <= 8, the size and the fd count.
    uint32_t nregions = 0;
    std::memcpy(&nregions, m.payload.data(), sizeof nregions);
    virtio::GuestMemoryMap map;
    for (uint32_t i = 0; i < nregions; ++i) {
        MemoryRegionDesc desc;
        std::memcpy(&desc, m.payload.data() + offsetof(MemoryTable, regions) + i * sizeof desc,
                    sizeof desc);
        virtio::GuestRegion region;
        if (MessageError e = map_memory_region(desc, m.fds[i].get(), &region);
            e != MessageError::ok) {
            return e;  // `map` and its mappings go away: nothing changed
        }
        if (MessageError e = from_memory_error(map.add(std::move(region))); e != MessageError::ok) {
            return e;
        }
    }
    publish_memory(std::make_shared<const virtio::GuestMemoryMap>(std::move(map)));
    return broken_ ? MessageError::ring_not_in_guest_memory : MessageError::ok;
}

MessageError VhostUserDevice::handle_add_mem_reg(Message& m, Message&) {
    SingleMemoryRegion msg;
    m.read_payload(msg);
    // QEMU (7.2) runs one vhost device per queue pair on the connection and
    // each adds every region: a region exactly like one we hold is the same
    // memory again, acknowledged and not mapped twice. Anything else that
    // overlaps is still refused by the map.
    for (const virtio::GuestRegion& r : memory_->regions()) {
        if (r.guest_phys_addr == msg.region.guest_phys_addr &&
            r.user_addr == msg.region.userspace_addr && r.size == msg.region.memory_size) {
            return MessageError::ok;
        }
    }
    // GET_MAX_MEM_SLOTS promised this many; never more.
    if (memory_->region_count() >= kAdvertisedMemSlots) {
        return MessageError::mem_too_many_regions;
    }
    virtio::GuestRegion region;
    if (MessageError e = map_memory_region(msg.region, m.fds[0].get(), &region);
        e != MessageError::ok) {
        return e;
    }
    virtio::GuestMemoryMap map = *memory_;
    if (MessageError e = from_memory_error(map.add(std::move(region))); e != MessageError::ok) {
        return e;
    }
    publish_memory(std::make_shared<const virtio::GuestMemoryMap>(std::move(map)));
    // Memory hotplug is rare and a user asks "did vnetd see it?": one line.
    log_->info("ADD_MEM_REG: guest 0x{:x} size 0x{:x} mapped ({} regions)",
               msg.region.guest_phys_addr, msg.region.memory_size, memory_->region_count());
    return broken_ ? MessageError::ring_not_in_guest_memory : MessageError::ok;
}

MessageError VhostUserDevice::handle_rem_mem_reg(Message& m, Message&) {
    SingleMemoryRegion msg;
    m.read_payload(msg);
    virtio::GuestMemoryMap map = *memory_;
    // vhost-user.rst REM_MEM_REG: match on guest address, user address and size.
    if (MessageError e = from_memory_error(map.remove(
            msg.region.guest_phys_addr, msg.region.userspace_addr, msg.region.memory_size));
        e != MessageError::ok) {
        return e;
    }
    // publish_memory stops every ring on its worker first (run_sync returns
    // between turns): once it returns no worker holds the old map, so the
    // removed region is unmapped here, after the last turn that could use it.
    publish_memory(std::make_shared<const virtio::GuestMemoryMap>(std::move(map)));
    log_->info("REM_MEM_REG: guest 0x{:x} size 0x{:x} unmapped ({} regions)",
               msg.region.guest_phys_addr, msg.region.memory_size, memory_->region_count());
    return broken_ ? MessageError::ring_not_in_guest_memory : MessageError::ok;
}

}  // namespace vnet::vhost_user
