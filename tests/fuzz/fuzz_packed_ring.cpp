// libFuzzer target: the packed ring's device side over hostile guest memory,
// driven as a sequence of API calls the way the port drives it. Must never
// crash; every invariant the DeviceRing contract promises traps if broken,
// and every pop is checked against a naive reference walker (differential).
//
// Input layout (little-endian):
//   [0]      queue size = 1 + byte                  (1..256, any value)
//   [1]      bit0 INDIRECT_DESC, bit1 EVENT_IDX, bit2 two regions,
//            bit3 leave a hole between the two regions
//   [2..3]   offset of the second region (two regions only)
//   [4..7]   SET_VRING_BASE value (a refused one leaves the ring at 0x8000)
//   [8..23]  16 operations (low 4 bits: kind, high 4 bits: argument); kinds
//            13/14 let the driver write a descriptor (taken from the payload)
//            into a slot it owns, as a guest racing with us would
//   [24..]   guest memory at guest address 0: descriptor ring (16 * size),
//            driver event area (4), device event area (4), then anything
//            (buffers, indirect tables). Zero-padded up to the ring's size.
// Each region is its own allocation of exactly its size, so ASan reports any
// access past a region's end.
#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/ring/packed_ring.hpp"

using namespace vnet::virtio;

namespace {

constexpr size_t kHeaderBytes = 24;
constexpr size_t kOps = 16;
constexpr size_t kMaxIov = 64;
constexpr uint64_t kHoleBytes = 0x1000;

uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t le32(const uint8_t* p) {
    return uint32_t{le16(p)} | (uint32_t{le16(p + 2)} << 16);
}

struct Buffer {
    std::unique_ptr<uint8_t, decltype(&std::free)> data{nullptr, &std::free};
    size_t size = 0;
};

Buffer make_buffer(const uint8_t* src, size_t size) {
    Buffer b;
    b.data.reset(static_cast<uint8_t*>(std::aligned_alloc(16, size)));
    b.size = size;
    std::memcpy(b.data.get(), src, size);
    return b;
}

// A chain the device took and has not completed, in pop order.
struct InFlight {
    uint16_t id;
    uint16_t slots;
    uint32_t writable_bytes;
    RingPosition before;  // position() just before it was popped
};

// A naive reference for one pop, written from the spec as plainly as
// possible (no shared code with PackedRing but the memory map): what the
// ring must answer. Differential check: the two must agree on whether the
// chain is taken, and on everything about it when it is.
enum class Expect : uint8_t { empty, ok, broken };
struct Reference {
    Expect expect = Expect::broken;
    uint16_t id = 0;
    uint32_t slots = 0;
    uint64_t readable_bytes = 0;
    uint64_t writable_bytes = 0;
    size_t segments = 0;
};

Reference reference_pop(const PackedRingLayout& l, const GuestMemoryMap& memory, bool indirect,
                        PackedPosition avail, uint32_t in_flight) {
    Reference r;
    struct Piece {
        uint64_t addr;
        uint32_t len;
        bool writable;
    };
    std::vector<Piece> pieces;
    const auto flags_say_available = [](uint16_t f, bool wrap) {
        const bool a = (f & (1u << 7)) != 0;
        const bool u = (f & (1u << 15)) != 0;
        return a == wrap && u != wrap;
    };
    uint32_t index = avail.index;
    bool wrap = avail.wrap;
    for (uint32_t i = 0;; ++i) {
        PackedDesc d;
        std::memcpy(&d, &l.desc[index], sizeof d);
        if (!flags_say_available(d.flags, wrap)) {
            r.expect = i == 0 ? Expect::empty : Expect::broken;
            return r;
        }
        ++r.slots;
        const bool next = (d.flags & 1) != 0;
        if ((d.flags & 4) != 0) {
            if (!indirect || next || i != 0 || d.len == 0 || d.len % 16 != 0 ||
                d.len / 16 > l.size) {
                return r;
            }
            const uint8_t* table = memory.gpa_to_host(d.addr, d.len);
            if (table == nullptr) {
                return r;
            }
            for (uint32_t e = 0; e < d.len / 16; ++e) {
                PackedDesc t;
                std::memcpy(&t, table + 16 * e, sizeof t);
                if ((t.flags & 4) != 0) {
                    return r;
                }
                pieces.push_back(Piece{t.addr, t.len, (t.flags & 2) != 0});
            }
        } else {
            pieces.push_back(Piece{d.addr, d.len, (d.flags & 2) != 0});
        }
        if (!next) {
            r.id = d.id;
            break;
        }
        if (i + 1 == l.size) {
            return r;
        }
        if (++index == l.size) {
            index = 0;
            wrap = !wrap;
        }
    }
    if (r.id >= l.size || in_flight + r.slots > l.size) {
        return r;
    }
    bool seen_writable = false;
    std::vector<iovec> scratch(2 * pieces.size());  // two regions: at most two pieces each
    for (const Piece& p : pieces) {
        if (!p.writable && seen_writable) {
            return r;
        }
        seen_writable = seen_writable || p.writable;
        (p.writable ? r.writable_bytes : r.readable_bytes) += p.len;
        if (r.readable_bytes + r.writable_bytes > UINT32_MAX) {
            return r;
        }
        if (!memory.gpa_to_iovecs(p.addr, p.len, scratch, &r.segments)) {
            return r;
        }
    }
    r.expect = Expect::ok;
    return r;
}

struct Fuzz {
    Buffer regions[2];
    size_t region_count = 0;
    GuestMemoryMap memory;
    PackedRingLayout layout{};
    RingConfig config{};
    PackedRing ring;
    std::vector<InFlight> in_flight;  // oldest first
    uint32_t phantom_slots = 0;       // in flight since a restored base: ids unknown
    std::array<iovec, kMaxIov> iov{};
    bool broken = false;
    // Staged burst: where its first used descriptor goes and what that slot held.
    bool staged = false;
    PackedPosition batch_head{};
    uint16_t batch_head_flags = 0;

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

    uint32_t in_flight_slots() const {
        uint32_t slots = phantom_slots;
        for (const InFlight& c : in_flight) {
            slots += c.slots;
        }
        return slots;
    }

    // Slots accounting: everything between the used and the avail position is
    // exactly the chains popped and not completed, never more than a ring.
    void check_accounting() const {
        const uint32_t between =
            slots_between(ring.used_position(), ring.avail_position(), layout.size);
        FUZZ_CHECK(between == in_flight_slots());
        FUZZ_CHECK(between <= layout.size);
        FUZZ_CHECK(ring.avail_position().index < layout.size);
        FUZZ_CHECK(ring.used_position().index < layout.size);
    }

    void pop(size_t room) {
        if (in_flight.size() >= 2u * layout.size) {
            return;
        }
        PoppedChain chain;
        const RingPosition before = ring.position();
        const Reference ref =
            reference_pop(layout, memory, config.indirect_allowed, ring.avail_position(),
                          slots_between(ring.used_position(), ring.avail_position(), layout.size));
        const PopStatus s = ring.pop(std::span<iovec>(iov.data(), room), chain);
        FUZZ_CHECK(s <= PopStatus::buffer_unmapped);
        FUZZ_CHECK(to_string(s) != nullptr);
        FUZZ_CHECK((s == PopStatus::empty) == (ref.expect == Expect::empty));
        FUZZ_CHECK(!breaks_ring(s) || ref.expect == Expect::broken);
        if (ref.expect == Expect::ok) {
            FUZZ_CHECK(s == (ref.segments <= room ? PopStatus::ok : PopStatus::too_many_segments));
        }
        if (s == PopStatus::ok) {
            FUZZ_CHECK(chain.id == ref.id && chain.slots == ref.slots);
            FUZZ_CHECK(chain.readable_bytes == ref.readable_bytes);
            FUZZ_CHECK(chain.writable_bytes == ref.writable_bytes);
            FUZZ_CHECK(chain.segment_count() == ref.segments);
        }
        if (s != PopStatus::ok) {
            if (breaks_ring(s)) {
                broken = true;  // unusable until the front end resets it
                return;
            }
            FUZZ_CHECK(ring.position() == before);  // empty and too_many_segments take nothing
            return;
        }
        FUZZ_CHECK(chain.id < layout.size);
        FUZZ_CHECK(chain.slots >= 1 && chain.slots <= layout.size);
        FUZZ_CHECK(slots_between(PackedPosition::decode(before.raw), ring.avail_position(),
                                 layout.size) == chain.slots % (2u * layout.size));
        FUZZ_CHECK(chain.segment_count() <= room);
        uint64_t readable = 0;
        uint64_t writable = 0;
        for (uint32_t i = 0; i < chain.segment_count(); ++i) {
            FUZZ_CHECK(iov[i].iov_len > 0);  // zero-length descriptors add no iovec
            FUZZ_CHECK(inside_guest_buffers(iov[i]));
            (i < chain.readable_segments ? readable : writable) += iov[i].iov_len;
        }
        FUZZ_CHECK(readable == chain.readable_bytes);
        FUZZ_CHECK(writable == chain.writable_bytes);
        FUZZ_CHECK(readable + writable <= UINT32_MAX);
        in_flight.push_back(InFlight{chain.id, chain.slots, chain.writable_bytes, before});
    }

    void complete_oldest(unsigned count, bool full_len) {
        while (count-- > 0 && !in_flight.empty()) {
            const InFlight c = in_flight.front();
            in_flight.erase(in_flight.begin());
            if (!staged) {
                staged = true;
                batch_head = ring.used_position();
                batch_head_flags = layout.desc[batch_head.index].flags;
            }
            ring.add_used(c.id, c.slots, full_len ? c.writable_bytes : 0);
            // The burst's first used descriptor stays invisible until publish_used.
            FUZZ_CHECK(layout.desc[batch_head.index].flags == batch_head_flags);
        }
    }

    void publish() {
        ring.publish_used();
        FUZZ_CHECK(ring.published_used_position() == ring.used_position());
        if (staged) {
            FUZZ_CHECK(is_used(layout.desc[batch_head.index].flags, batch_head.wrap));
            staged = false;
        }
    }

    void rewind(unsigned count) {
        if (count == 0 || count > in_flight.size()) {
            return;
        }
        const RingPosition to = in_flight[in_flight.size() - count].before;
        in_flight.resize(in_flight.size() - count);
        ring.rewind(to);
        FUZZ_CHECK(ring.position() == to);
    }

    // GET_VRING_BASE then SET_VRING_BASE on a new ring: the same place.
    void restart() {
        publish();
        const uint32_t base = ring.vring_base();
        PackedRing fresh(layout, config);
        FUZZ_CHECK(fresh.restore_vring_base(base) == BaseError::ok);
        if ((base >> 16) != 0) {
            FUZZ_CHECK(fresh.vring_base() == base);
        } else {
            // Used at slot 0 with wrap 0 encodes as 0, which reads as "avail half only"
            // (DPDK virtio-user): used = avail, and chains in flight are forgotten.
            FUZZ_CHECK(fresh.avail_position() == ring.avail_position());
            FUZZ_CHECK(fresh.used_position() == fresh.avail_position());
            in_flight.clear();
            phantom_slots = 0;
        }
        ring = fresh;
    }

    // The driver makes a descriptor available (or scribbles on one) while we
    // run: only in slots it owns, outside [published used, avail), since the
    // rest are the device's until it publishes them.
    void driver_writes(unsigned arg, bool valid_flags, const uint8_t* bytes, size_t len) {
        const uint32_t owned = layout.size - slots_between(ring.published_used_position(),
                                                           ring.avail_position(), layout.size);
        if (owned == 0 || len < sizeof(PackedDesc)) {
            return;
        }
        const PackedPosition at = advance(ring.avail_position(), arg % owned, layout.size);
        PackedDesc d;
        std::memcpy(&d, bytes + (cursor % (len - sizeof(PackedDesc) + 1)), sizeof d);
        cursor += 7 * sizeof d + arg;
        if (valid_flags) {
            d.flags = static_cast<uint16_t>(
                (d.flags & ~(PackedDesc::kFlagAvail | PackedDesc::kFlagUsed)) |
                avail_flags_for(at.wrap));
        }
        layout.desc[at.index] = d;
    }
    size_t cursor = 0;

    // A front end's SET_VRING_BASE: refused values change nothing.
    void restore(uint32_t num) {
        publish();
        const uint32_t old = ring.vring_base();
        const BaseError e = ring.restore_vring_base(num);
        FUZZ_CHECK(to_string(e) != nullptr);
        if (e != BaseError::ok) {
            FUZZ_CHECK(ring.vring_base() == old);
            return;
        }
        in_flight.clear();
        phantom_slots = slots_between(ring.used_position(), ring.avail_position(), layout.size);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < kHeaderBytes) {
        return 0;
    }
    const auto queue_size = static_cast<uint16_t>(1u + data[0]);
    const bool indirect_allowed = (data[1] & 1) != 0;
    const bool event_idx = (data[1] & 2) != 0;
    const bool two_regions = (data[1] & 4) != 0;
    const bool hole = (data[1] & 8) != 0;
    // VIRTIO_F_IN_ORDER: zero-length completions fold into one used descriptor.
    const bool in_order = (data[1] & 16) != 0;
    const uint16_t split_seed = le16(data + 2);
    const uint32_t base = le32(data + 4);
    const uint8_t* ops = data + 8;

    const uint64_t events_off = packed_desc_ring_bytes(queue_size);
    const uint64_t ring_end = events_off + 8;

    const size_t payload = size - kHeaderBytes;
    size_t mem_size = payload > ring_end ? payload : static_cast<size_t>(ring_end);
    mem_size = (mem_size + 15) & ~size_t{15};
    auto flat = std::make_unique<uint8_t[]>(mem_size);
    std::memcpy(flat.get(), data + kHeaderBytes, payload);

    Fuzz f;
    size_t first_size = mem_size;
    if (two_regions) {
        const size_t room = (mem_size - ring_end) / 16;
        const size_t split = ((ring_end + 15) / 16 + (room > 0 ? split_seed % room : 0)) * 16;
        if (split < mem_size) {
            first_size = split;
        }
    }
    f.regions[0] = make_buffer(flat.get(), first_size);
    f.region_count = 1;
    FUZZ_CHECK(f.memory.add(GuestRegion{0, first_size, 0x7f00'0000'0000, f.regions[0].data.get(),
                                        nullptr}) == MemoryError::ok);
    if (first_size < mem_size) {
        f.regions[1] = make_buffer(flat.get() + first_size, mem_size - first_size);
        f.region_count = 2;
        const uint64_t gpa = first_size + (hole ? kHoleBytes : 0);
        FUZZ_CHECK(f.memory.add(GuestRegion{gpa, f.regions[1].size, 0x7f10'0000'0000,
                                            f.regions[1].data.get(), nullptr}) == MemoryError::ok);
    }

    uint8_t* ring_base = f.regions[0].data.get();
    f.layout = PackedRingLayout{
        reinterpret_cast<PackedDesc*>(ring_base),
        reinterpret_cast<PackedEventSuppress*>(ring_base + events_off),
        reinterpret_cast<PackedEventSuppress*>(ring_base + events_off + 4),
        queue_size,
    };
    f.config = RingConfig{&f.memory, indirect_allowed, event_idx, in_order};
    f.ring = PackedRing(f.layout, f.config);
    f.restore(base);
    f.check_accounting();

    for (size_t op = 0; op < kOps && !f.broken; ++op) {
        const unsigned arg = ops[op] >> 4;
        switch (ops[op] & 15) {
            case 0:
            case 1:
            case 2:  // a burst of pops with room for 1..61 iovecs each
                for (unsigned i = 0; i <= arg && !f.broken; ++i) {
                    f.pop(1 + arg * 4);
                }
                break;
            case 3:
                f.complete_oldest(1 + arg, (arg & 1) != 0);
                break;
            case 4:
                f.publish();
                break;
            case 5:
                f.rewind(arg);
                break;
            case 6:
                (void)f.ring.should_notify();
                break;
            case 7:
                (void)f.ring.enable_notifications();
                break;
            case 8:
                f.ring.disable_notifications();
                break;
            case 9:
                f.restart();
                break;
            case 10:
                f.restore(base ^ (arg * 0x9e37'79b9u));
                break;
            case 11:  // everything the burst took, completed and published in one go
                f.complete_oldest(static_cast<unsigned>(f.in_flight.size()), true);
                f.publish();
                (void)f.ring.should_notify();
                break;
            case 13:
            case 14:
                f.driver_writes(arg, (ops[op] & 15) == 13, data + kHeaderBytes, payload);
                break;
            default:  // one pop with a tight iovec budget (0..15)
                f.pop(arg);
                break;
        }
        if (!f.broken) {
            f.check_accounting();
        }
    }
    return 0;
}
