// libFuzzer target: descriptor-chain walker and device-side split ring over
// hostile guest memory. Must never crash; invariants trap.
//
// Input layout (little-endian):
//   [0]      queue size = 1 << (byte % 9)          (1..256)
//   [1]      bit0 indirect_allowed, bit1 EVENT_IDX, bit2 two regions,
//            bit3 leave a hole between the two regions
//   [2..3]   offset of the second region in the memory bytes (two regions only)
//   [4..5]   last_avail_idx (SET_VRING_BASE)    [6..7] used idx
//   [8..9]   head seed for direct walks
//   [10..15] six operations (low 3 bits: kind, high 5 bits: argument);
//            kind 1 pops a burst with SplitDeviceRing::pop_burst and the
//            same chains with pop in a loop (the reference walk) from a
//            twin ring over the same memory: both must agree exactly
//   [16..]   guest memory, at guest address 0: descriptor table, avail ring,
//            used ring (split-ring layout from offset 0), then anything
//            (buffers, indirect tables). Zero-padded up to the ring's size.
// Each region is its own allocation of exactly its size, so ASan reports any
// access a walk makes past a region's end.
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fuzz_check.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/ring/descriptor_chain.hpp"
#include "virtio/ring/split_device_ring.hpp"
#include "virtio/ring/split_ring.hpp"

using namespace vnet::virtio;

namespace {

constexpr size_t kHeaderBytes = 16;
constexpr size_t kMaxIov = 64;
constexpr uint64_t kHoleBytes = 0x1000;

uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

struct Buffer {
    std::unique_ptr<uint8_t, decltype(&std::free)> data{nullptr, &std::free};
    size_t size = 0;
};

Buffer make_buffer(const uint8_t* src, size_t size) {
    Buffer b;
    // aligned_alloc needs a multiple of the alignment; ASan still knows the
    // rounded size, so keep regions a multiple of 16 bytes.
    b.data.reset(static_cast<uint8_t*>(std::aligned_alloc(16, size)));
    b.size = size;
    std::memcpy(b.data.get(), src, size);
    return b;
}

struct Fuzz {
    Buffer regions[2];
    size_t region_count = 0;
    GuestMemoryMap memory;
    size_t hint = 0;
    std::array<iovec, kMaxIov> iov{};

    bool inside_guest_buffers(const iovec& v) const {
        const auto* p = static_cast<const uint8_t*>(v.iov_base);
        for (size_t i = 0; i < region_count; ++i) {
            const uint8_t* base = regions[i].data.get();
            if (p >= base && v.iov_len <= regions[i].size &&
                static_cast<size_t>(p - base) <= regions[i].size - v.iov_len) {
                return true;
            }
        }
        return false;
    }

    // Walks one chain and checks what an ok walk promises.
    PopStatus walk(const ChainWalkContext& ctx, uint16_t head, size_t out_size) {
        DescriptorChain chain;
        const PopStatus e =
            walk_descriptor_chain(ctx, head, std::span<iovec>(iov.data(), out_size), chain);
        FUZZ_CHECK(e <= PopStatus::buffer_unmapped);
        FUZZ_CHECK(to_string(e) != nullptr);
        if (e != PopStatus::ok) {
            FUZZ_CHECK(e != PopStatus::head_out_of_range || head >= ctx.queue_size);
            return e;
        }
        FUZZ_CHECK(head < ctx.queue_size);
        FUZZ_CHECK(chain.head == head);
        FUZZ_CHECK(chain.segment_count() <= out_size);
        uint64_t readable = 0;
        uint64_t writable = 0;
        for (uint32_t i = 0; i < chain.segment_count(); ++i) {
            FUZZ_CHECK(iov[i].iov_len > 0);  // zero-length descriptors add no iovec
            FUZZ_CHECK(inside_guest_buffers(iov[i]));
            (i < chain.readable_segments ? readable : writable) += iov[i].iov_len;
        }
        FUZZ_CHECK(readable == chain.readable_bytes);
        FUZZ_CHECK(writable == chain.writable_bytes);
        // virtio 1.2 §2.7.5.2: an accepted chain is shorter than 2^32 bytes.
        FUZZ_CHECK(readable + writable <= UINT32_MAX);
        return e;
    }
};

// pop_burst against pop in a loop over the same guest memory: the same
// chains, iovecs, positions, status and vring base. Returns false once the
// rings are broken (a rule the guest broke ends their use, as a queue's).
bool burst_matches_pops(SplitDeviceRing& burst, SplitDeviceRing& reference, size_t max, size_t room,
                        const Fuzz& f) {
    std::array<iovec, kMaxIov> burst_iov{};
    std::array<iovec, kMaxIov> reference_iov{};
    std::array<PoppedChain, 32> chains{};
    std::array<RingPosition, 33> before{};
    const BurstPop got = burst.pop_burst(std::span<iovec>(burst_iov.data(), room),
                                         std::span<PoppedChain>(chains.data(), max), before);
    FUZZ_CHECK(got.count <= max);
    FUZZ_CHECK(to_string(got.status) != nullptr);
    size_t used = 0;
    PopStatus status = PopStatus::ok;
    uint16_t count = 0;
    while (count < max) {
        FUZZ_CHECK(before[count] == reference.position());
        PoppedChain c;
        status = reference.pop(std::span<iovec>(reference_iov.data() + used, room - used), c);
        if (status != PopStatus::ok) {
            break;
        }
        FUZZ_CHECK(count < got.count);
        const PoppedChain& b = chains[count];
        FUZZ_CHECK(b.id == c.id && b.slots == c.slots);
        FUZZ_CHECK(b.readable_segments == c.readable_segments &&
                   b.writable_segments == c.writable_segments);
        FUZZ_CHECK(b.readable_bytes == c.readable_bytes && b.writable_bytes == c.writable_bytes);
        for (uint32_t i = 0; i < c.segment_count(); ++i) {
            FUZZ_CHECK(burst_iov[used + i].iov_base == reference_iov[used + i].iov_base);
            FUZZ_CHECK(burst_iov[used + i].iov_len == reference_iov[used + i].iov_len);
            FUZZ_CHECK(f.inside_guest_buffers(burst_iov[used + i]));
        }
        used += c.segment_count();
        ++count;
    }
    FUZZ_CHECK(count == got.count);
    FUZZ_CHECK(status == got.status);
    if (status == PopStatus::ok) {  // filled: the position after the last chain
        FUZZ_CHECK(before[count] == reference.position());
    }
    FUZZ_CHECK(burst.vring_base() == reference.vring_base());
    return !breaks_ring(status);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < kHeaderBytes) {
        return 0;
    }
    const auto queue_size = static_cast<uint16_t>(1u << (data[0] % 9));
    const bool indirect_allowed = (data[1] & 1) != 0;
    const bool event_idx = (data[1] & 2) != 0;
    const bool two_regions = (data[1] & 4) != 0;
    const bool hole = (data[1] & 8) != 0;
    const uint16_t split_seed = le16(data + 2);
    const uint16_t last_avail = le16(data + 4);
    const uint16_t used_idx = le16(data + 6);
    const uint16_t head_seed = le16(data + 8);
    const uint8_t* ops = data + 10;

    // Split-ring layout from guest address 0 (virtio 1.2 §2.7 alignments).
    const uint64_t avail_off = desc_table_bytes(queue_size);
    const uint64_t used_off = (avail_off + avail_ring_bytes(queue_size) + 3) & ~uint64_t{3};
    const uint64_t ring_end = used_off + used_ring_bytes(queue_size);

    // Guest memory: the fuzzed bytes, zero-padded to hold the ring, rounded to 16.
    const size_t payload = size - kHeaderBytes;
    size_t mem_size = payload > ring_end ? payload : static_cast<size_t>(ring_end);
    mem_size = (mem_size + 15) & ~size_t{15};
    auto flat = std::make_unique<uint8_t[]>(mem_size);
    std::memcpy(flat.get(), data + kHeaderBytes, payload);

    Fuzz f;
    size_t first_size = mem_size;
    if (two_regions) {
        // The second region starts somewhere after the ring, on a 16-byte boundary.
        const size_t room = (mem_size - ring_end) / 16;
        const size_t split = ((ring_end + 15) / 16 + (room > 0 ? split_seed % room : 0)) * 16;
        if (split < mem_size) {
            first_size = split;
        }
    }
    f.regions[0] = make_buffer(flat.get(), first_size);
    f.region_count = 1;
    if (f.memory.add(GuestRegion{0, first_size, 0x7f00'0000'0000, f.regions[0].data.get(),
                                 nullptr}) != MemoryError::ok) {
        __builtin_trap();
    }
    if (first_size < mem_size) {
        f.regions[1] = make_buffer(flat.get() + first_size, mem_size - first_size);
        f.region_count = 2;
        const uint64_t gpa = first_size + (hole ? kHoleBytes : 0);
        if (f.memory.add(GuestRegion{gpa, f.regions[1].size, 0x7f10'0000'0000,
                                     f.regions[1].data.get(), nullptr}) != MemoryError::ok) {
            __builtin_trap();
        }
    }

    uint8_t* ring_base = f.regions[0].data.get();
    SplitRingLayout layout{
        static_cast<VirtqDesc*>(static_cast<void*>(ring_base)),
        static_cast<VirtqAvail*>(static_cast<void*>(ring_base + avail_off)),
        static_cast<VirtqUsed*>(static_cast<void*>(ring_base + used_off)),
        queue_size,
    };
    const ChainWalkContext ctx{layout.desc, queue_size, indirect_allowed, &f.memory, &f.hint};

    // Direct walks: a few heads from the seed, including out-of-range ones.
    for (uint16_t i = 0; i < 4; ++i) {
        const auto head = static_cast<uint16_t>(head_seed + i * 0x4001u);
        f.walk(ctx, head, 1 + (head_seed >> 10) % kMaxIov);
    }

    // The device loop as a dataplane drives it: pop, walk, use, publish, notify.
    SplitRing ring(layout, last_avail, used_idx, event_idx);
    // Twins for kind 1: they only read the avail side and descriptors.
    const RingConfig twin_config{&f.memory, indirect_allowed, event_idx, false};
    SplitDeviceRing burst_ring(layout, twin_config, used_idx);
    SplitDeviceRing reference_ring(layout, twin_config, used_idx);
    (void)burst_ring.restore_vring_base(last_avail);
    (void)reference_ring.restore_vring_base(last_avail);
    bool twins_broken = false;
    std::array<uint16_t, 32> heads{};
    uint16_t popped_total = 0;
    bool broken = false;
    for (size_t op = 0; op < 6 && !broken; ++op) {
        const unsigned arg = ops[op] >> 3;
        switch (ops[op] & 7) {
            case 1:  // a burst against the reference walk
                if (!twins_broken) {
                    twins_broken = !burst_matches_pops(burst_ring, reference_ring, 1 + arg,
                                                       1 + (arg * 7u + head_seed) % kMaxIov, f);
                }
                break;
            case 0: {  // pop a batch, walk each chain, use it
                PopStatus error = PopStatus::ok;
                const uint16_t before = ring.last_avail_idx();
                const uint16_t n =
                    ring.pop_avail(std::span<uint16_t>(heads.data(), 1 + arg), &error);
                FUZZ_CHECK(n <= 1 + arg);
                if (error != PopStatus::ok) {
                    FUZZ_CHECK(n == 0);
                    FUZZ_CHECK(ring.last_avail_idx() == before);
                    broken = true;  // the ring is unusable until reset
                    break;
                }
                FUZZ_CHECK(ring.last_avail_idx() == static_cast<uint16_t>(before + n));
                FUZZ_CHECK(n <= queue_size);
                popped_total = static_cast<uint16_t>(popped_total + n);
                const uint16_t used_before = ring.used_idx();
                for (uint16_t i = 0; i < n; ++i) {
                    FUZZ_CHECK(heads[i] < queue_size);
                    f.walk(ctx, heads[i], kMaxIov);
                    ring.add_used(heads[i], 0);
                }
                FUZZ_CHECK(ring.used_idx() == static_cast<uint16_t>(used_before + n));
                ring.publish_used();
                FUZZ_CHECK(std::atomic_ref<uint16_t>(layout.used->idx).load() == ring.used_idx());
                break;
            }
            case 2:
                (void)ring.should_notify();
                break;
            case 3:
                (void)ring.enable_notifications();
                break;
            case 4:
                ring.disable_notifications();
                break;
            case 5: {  // give back some of what was popped
                const auto count = static_cast<uint16_t>(arg < popped_total ? arg : popped_total);
                const uint16_t before = ring.last_avail_idx();
                ring.unpop_avail(count);
                popped_total = static_cast<uint16_t>(popped_total - count);
                FUZZ_CHECK(ring.last_avail_idx() == static_cast<uint16_t>(before - count));
                break;
            }
            case 6: {  // avail_count never reports more than a ring's worth
                PopStatus error = PopStatus::ok;
                const uint16_t avail = ring.avail_count(&error);
                FUZZ_CHECK(error != PopStatus::ok || avail <= queue_size);
                break;
            }
            default:
                f.walk(ctx, static_cast<uint16_t>(arg % queue_size), 1 + arg);
                break;
        }
    }
    return 0;
}
