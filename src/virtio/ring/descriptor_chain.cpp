#include "virtio/ring/descriptor_chain.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "virtio/ring/chain_segments.hpp"

namespace vnet::virtio {

namespace {

// One descriptor as read, once, from guest memory (read_descriptor_once).
// Checks run on this copy only, so the guest cannot change a field between
// check and use.
using LocalDesc = VirtqDesc;

inline LocalDesc read_desc_once(const VirtqDesc* d) {
    return read_descriptor_once(d);
}

struct WalkState {
    const VirtqDesc* table;
    uint32_t table_size;  // entries in `table`: queue size, or indirect table length
    bool in_indirect = false;
    size_t segments = 0;
    uint64_t total_bytes = 0;
    uint32_t readable_segments = 0;
    uint64_t readable_bytes = 0;
    bool seen_writable = false;
};

// Switches the walk into the indirect table `d` refers to.
inline PopStatus enter_indirect(const ChainWalkContext& ctx, const LocalDesc& d, WalkState& s) {
    // virtio 1.2 §2.7.5.3.1: INDIRECT only if VIRTIO_F_INDIRECT_DESC was negotiated
    if (!ctx.indirect_allowed) {
        return PopStatus::indirect_not_negotiated;
    }
    // virtio 1.2 §2.7.5.3.1: no INDIRECT inside an indirect table (one table per descriptor)
    if (s.in_indirect) {
        return PopStatus::indirect_nested;
    }
    // virtio 1.2 §2.7.5.3.1: a driver MUST NOT set both INDIRECT and NEXT
    if ((d.flags & VirtqDesc::kFlagNext) != 0) {
        return PopStatus::indirect_with_next;
    }
    // virtio 1.2 §2.7.5.3: the table is len/16 descriptors; vhost get_indirect: len % 16 is
    // -EINVAL, and an empty table has no end-of-chain descriptor
    if (d.len == 0 || d.len % sizeof(VirtqDesc) != 0) {
        return PopStatus::indirect_bad_length;
    }
    const uint32_t entries = d.len / sizeof(VirtqDesc);
    // virtio 1.2 §2.7.5.3.1: no chain longer than the queue size (vhost: > 65536 is -E2BIG)
    if (entries > ctx.queue_size || entries > 65536) {
        return PopStatus::indirect_too_large;
    }
    // vhost translate_desc: the table is read in place, so it must lie in one region
    const uint8_t* host = ctx.memory->gpa_to_host(d.addr, d.len, ctx.region_hint);
    if (host == nullptr) {
        return PopStatus::indirect_table_unmapped;
    }
    s.table = static_cast<const VirtqDesc*>(static_cast<const void*>(host));
    s.table_size = entries;
    s.in_indirect = true;
    return PopStatus::ok;
}

// Appends the iovecs of one buffer at out[segments...] (none for a
// zero-length one, which needs no mapping).
inline PopStatus map_buffer(const ChainWalkContext& ctx, const LocalDesc& d, std::span<iovec> out,
                            size_t& segments) {
    if (d.len == 0) {
        return PopStatus::ok;
    }
    // The common case inline: the whole buffer lies in the region the hint
    // names (a TX ring keeps hitting one region). Same result as
    // gpa_to_iovecs, which would find that region first and make one iovec.
    if (ctx.region_hint != nullptr && segments < out.size()) {
        const std::span<const GuestRegion> regions = ctx.memory->regions();
        if (*ctx.region_hint < regions.size()) {
            const GuestRegion& r = regions[*ctx.region_hint];
            const uint64_t offset = d.addr - r.guest_phys_addr;
            if (offset < r.size && d.len <= r.size - offset) {
                out[segments++] = iovec{r.host_addr + offset, d.len};
                return PopStatus::ok;
            }
        }
    }
    // vhost translate_desc: a buffer may span regions (one iovec each) but must be mapped
    if (!ctx.memory->gpa_to_iovecs(d.addr, d.len, out, &segments, ctx.region_hint)) {
        return classify_buffer_failure(*ctx.memory, d.addr, d.len);
    }
    return PopStatus::ok;
}

// Appends one non-indirect descriptor's buffer to the iovecs. A zero-length
// buffer adds no iovec but still counts for the readable/writable order.
inline PopStatus add_buffer(const ChainWalkContext& ctx, const LocalDesc& d, std::span<iovec> out,
                            WalkState& s) {
    const bool writable = (d.flags & VirtqDesc::kFlagWrite) != 0;
    // virtio 1.2 §2.7.5.2: device-writable descriptors come after all device-readable ones
    if (!writable && s.seen_writable) {
        return PopStatus::readable_after_writable;
    }
    if (writable && !s.seen_writable) {
        s.seen_writable = true;
        s.readable_segments = static_cast<uint32_t>(s.segments);
        s.readable_bytes = s.total_bytes;
    }
    s.total_bytes += d.len;
    // virtio 1.2 §2.7.5.2: a chain longer than 2^32 bytes is illegal
    if (s.total_bytes > UINT32_MAX) {
        return PopStatus::total_length_overflow;
    }
    return map_buffer(ctx, d, out, s.segments);
}

// The general walk, from `d`: the descriptor already read (once) at the
// current position, `visited` counting it. Direct chains of any length,
// indirect tables, every rule.
PopStatus walk_from(const ChainWalkContext& ctx, LocalDesc d, uint32_t visited,
                    std::span<iovec> out, WalkState& s) {
    for (;;) {
        const bool indirect = (d.flags & VirtqDesc::kFlagIndirect) != 0;
        const PopStatus e = indirect ? enter_indirect(ctx, d, s) : add_buffer(ctx, d, out, s);
        if (e != PopStatus::ok) [[unlikely]] {
            return e;
        }
        uint32_t index = 0;  // virtio 1.2 §2.7.5.3: the table's first descriptor is index 0
        if (indirect) {
            visited = 0;
        } else {
            if ((d.flags & VirtqDesc::kFlagNext) == 0) {
                return PopStatus::ok;
            }
            index = d.next;
            // virtio 1.2 §2.7.5: next names a descriptor of the same table; vhost: -EINVAL if
            // >= num
            if (index >= s.table_size) {
                return PopStatus::next_out_of_range;
            }
        }
        // virtio 1.2 §2.7.5.2: loops are forbidden; vhost: "Loop detected" once found > num
        if (++visited > s.table_size) {
            return PopStatus::chain_loop;
        }
        d = read_desc_once(&s.table[index]);
    }
}

// The second step of walk_from, unrolled for the two-descriptor chain a
// TX ring often carries (virtio header, then frame): the same checks in the
// same order, on the same single reads; a longer chain or an indirect
// table continues in walk_from with the descriptor already read.
PopStatus walk_after_first(const ChainWalkContext& ctx, const LocalDesc& d0, std::span<iovec> out,
                           WalkState& s) {
    const uint32_t index = d0.next;
    // The two checks walk_from makes before reading a second descriptor.
    if (index >= s.table_size) {
        return PopStatus::next_out_of_range;
    }
    if (s.table_size < 2) {
        return PopStatus::chain_loop;
    }
    const LocalDesc d1 = read_desc_once(&s.table[index]);
    if ((d1.flags & (VirtqDesc::kFlagIndirect | VirtqDesc::kFlagNext)) != 0) {
        return walk_from(ctx, d1, 2, out, s);
    }
    return add_buffer(ctx, d1, out, s);
}

}  // namespace

namespace {

// Everything but the one-descriptor chain whose buffer lies in the hinted
// region: out of line, so that the common case below needs no stack frame.
[[gnu::noinline]] PopStatus walk_rest(const ChainWalkContext& ctx, uint16_t head, LocalDesc d0,
                                      std::span<iovec> out, DescriptorChain& chain) {
    // Segment counts are 16-bit in DescriptorChain.
    out = out.first(std::min<size_t>(out.size(), UINT16_MAX));
    if ((d0.flags & (VirtqDesc::kFlagIndirect | VirtqDesc::kFlagNext)) == 0) {
        // A chain of one direct descriptor: of all the rules only the
        // mapping can fail, since neither the order rule nor the 2^32 limit
        // can be broken by one u32 buffer.
        size_t segments = 0;
        const PopStatus e = map_buffer(ctx, d0, out, segments);
        if (e != PopStatus::ok) {
            return e;
        }
        const bool writable = (d0.flags & VirtqDesc::kFlagWrite) != 0;
        chain.head = head;
        chain.readable_segments = writable ? 0 : static_cast<uint32_t>(segments);
        chain.writable_segments = writable ? static_cast<uint32_t>(segments) : 0;
        chain.readable_bytes = writable ? 0 : d0.len;
        chain.writable_bytes = writable ? d0.len : 0;
        return PopStatus::ok;
    }
    WalkState s{ctx.desc_table, ctx.queue_size};
    PopStatus e = PopStatus::ok;
    if ((d0.flags & VirtqDesc::kFlagIndirect) != 0) {
        e = walk_from(ctx, d0, 1, out, s);
    } else {
        e = add_buffer(ctx, d0, out, s);
        if (e == PopStatus::ok) {
            e = walk_after_first(ctx, d0, out, s);
        }
    }
    if (e != PopStatus::ok) [[unlikely]] {
        return e;
    }
    if (!s.seen_writable) {
        s.readable_segments = static_cast<uint32_t>(s.segments);
        s.readable_bytes = s.total_bytes;
    }
    chain.head = head;
    chain.readable_segments = static_cast<uint32_t>(s.readable_segments);
    chain.writable_segments = static_cast<uint32_t>(s.segments - s.readable_segments);
    chain.readable_bytes = static_cast<uint32_t>(s.readable_bytes);
    chain.writable_bytes = static_cast<uint32_t>(s.total_bytes - s.readable_bytes);
    return PopStatus::ok;
}

}  // namespace

[[gnu::cold, gnu::noinline]] VirtqDesc read_misaligned_descriptor_once(const VirtqDesc* d) {
    const auto* src = reinterpret_cast<const uint8_t*>(d);
    uint8_t bytes[sizeof(VirtqDesc)];
    for (size_t i = 0; i < sizeof(bytes); ++i) {
        bytes[i] = shared::load_relaxed(src[i]);
    }
    VirtqDesc out;
    std::memcpy(&out.addr, bytes, 8);
    std::memcpy(&out.len, bytes + 8, 4);
    std::memcpy(&out.flags, bytes + 12, 2);
    std::memcpy(&out.next, bytes + 14, 2);
    return out;
}

PopStatus walk_descriptor_chain_from(const ChainWalkContext& ctx, uint16_t head,
                                     const VirtqDesc& first, std::span<iovec> out,
                                     DescriptorChain& chain) {
    return walk_rest(ctx, head, first, out, chain);
}

PopStatus walk_descriptor_chain(const ChainWalkContext& ctx, uint16_t head, std::span<iovec> out,
                                DescriptorChain& chain) {
    // vhost_get_vq_desc: "Guest says index %u > %u" (the head must name a descriptor)
    if (head >= ctx.queue_size) {
        return PopStatus::head_out_of_range;
    }
    // One descriptor is never a loop: head < queue size.
    const LocalDesc d0 = read_desc_once(&ctx.desc_table[head]);
    // The common TX packet: one direct, non-empty descriptor (virtio header
    // and frame in one buffer) inside the region the hint names. The same
    // iovec and chain walk_rest would give; anything else goes there, with
    // the descriptor already read.
    if ((d0.flags & (VirtqDesc::kFlagIndirect | VirtqDesc::kFlagNext)) == 0 && d0.len != 0 &&
        ctx.region_hint != nullptr && !out.empty()) [[likely]] {
        const std::span<const GuestRegion> regions = ctx.memory->regions();
        const size_t hint = *ctx.region_hint;
        if (hint < regions.size()) [[likely]] {
            const GuestRegion& r = regions[hint];
            const uint64_t offset = d0.addr - r.guest_phys_addr;
            if (offset < r.size && d0.len <= r.size - offset) [[likely]] {
                out[0] = iovec{r.host_addr + offset, d0.len};
                const bool writable = (d0.flags & VirtqDesc::kFlagWrite) != 0;
                chain.head = head;
                chain.readable_segments = writable ? 0 : 1;
                chain.writable_segments = writable ? 1 : 0;
                chain.readable_bytes = writable ? 0 : d0.len;
                chain.writable_bytes = writable ? d0.len : 0;
                return PopStatus::ok;
            }
        }
    }
    return walk_rest(ctx, head, d0, out, chain);
}

}  // namespace vnet::virtio
