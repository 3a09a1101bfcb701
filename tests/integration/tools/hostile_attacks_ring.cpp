// Attacks on ring state and on the datapath: rules 1 and 7 of
// reference/hostile-input-rules.md (validate before changing state, no
// resize or rebase of a running ring, a stopped ring needs its full set-up
// again; avail index jumps, loops, indirect tables, never write into a
// descriptor without WRITE); on packed rings: stale wrap bits, ids out of
// range, a chain longer than the ring.
#include <atomic>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "frontend/driver_packed_ring.hpp"
#include "frontend/driver_packed_ring_layout.hpp"
#include "frontend/raw_packed_ring_writer.hpp"

#include "hostile_attacks.hpp"
#include "hostile_guest.hpp"
#include "hostile_wire.hpp"

namespace vnet::hostile {
namespace {

using std::chrono::milliseconds;
using vhost_user::Request;
using virtio::VirtqDesc;

constexpr milliseconds kDropTimeout{3000};
constexpr uint32_t kTx = HostileGuest::kTx;
constexpr uint32_t kRx = HostileGuest::kRx;

// A brought-up guest whose TX ring is proven to move.
std::unique_ptr<HostileGuest> running_guest(const AttackContext& ctx, const GuestConfig& config) {
    auto g = std::make_unique<HostileGuest>(ctx.socket_path, config);
    g->bring_up();
    const uint64_t done = g->send_frames(32, milliseconds(3000));
    if (done != 32) {
        throw std::runtime_error("TX ring does not move before the attack (" +
                                 std::to_string(done) + " of 32 frames)");
    }
    return g;
}

void require_frames(HostileGuest& g, uint64_t count, const char* when) {
    const uint64_t done = g.send_frames(count, milliseconds(5000));
    if (done != count) {
        throw BackendMisbehaved(std::string("only ") + std::to_string(done) + " of " +
                                std::to_string(count) + " frames completed " + when);
    }
    say("%llu frames completed %s", static_cast<unsigned long long>(count), when);
}

// Publishes `head` on the TX ring, kicks, and requires the device to break.
void publish_bad_chain(HostileGuest& g, uint16_t head, const char* what) {
    const uint16_t used_before = g.used_idx(kTx);
    g.publish_head(kTx, head);
    g.kick(kTx);
    say("published %s and kicked", what);
    std::this_thread::sleep_for(milliseconds(300));
    const uint16_t used_after = g.used_idx(kTx);
    if (used_after != used_before) {
        say("back end completed %u used entries for it",
            static_cast<unsigned>(used_after - used_before));
    }
    require_drop(g.socket_fd(), what, kDropTimeout);
}

VirtqDesc make_desc(uint64_t addr, uint32_t len, uint16_t flags, uint16_t next) {
    return VirtqDesc{addr, len, flags, next};
}

uint64_t gpa(const std::byte* p) {
    return reinterpret_cast<uintptr_t>(p);
}

// ---- looping-chain --------------------------------------------------------------

void two_descriptor_loop(const AttackContext& ctx) {
    auto g = running_guest(ctx, GuestConfig{});
    // 0 -> 1 -> 0 -> ...: both readable, both with NEXT.
    g->desc(kTx, 0) = make_desc(g->frame_gpa(), g->frame_len(), VirtqDesc::kFlagNext, 1);
    g->desc(kTx, 1) = make_desc(g->frame_gpa(), 16, VirtqDesc::kFlagNext, 0);
    publish_bad_chain(*g, 0, "a TX chain that loops (0 -> 1 -> 0)");
}

void self_loop(const AttackContext& ctx) {
    auto g = running_guest(ctx, GuestConfig{});
    // Zero-length buffers add no iovec: only the loop counter can stop this walk.
    g->desc(kTx, 5) = make_desc(g->frame_gpa(), 0, VirtqDesc::kFlagNext, 5);
    publish_bad_chain(*g, 5, "a TX chain of one zero-length descriptor whose next is itself");
}

void next_out_of_range(const AttackContext& ctx) {
    auto g = running_guest(ctx, GuestConfig{});
    g->desc(kTx, 0) = make_desc(g->frame_gpa(), g->frame_len(), VirtqDesc::kFlagNext, 300);
    publish_bad_chain(*g, 0, "a TX chain whose next is 300 in a 256-entry table");
}

constexpr Variant kLoopingChain[] = {
    {"loop", two_descriptor_loop},
    {"self-loop", self_loop},
    {"next-out-of-range", next_out_of_range},
};

// ---- bad-indirect --------------------------------------------------------------

void indirect_not_negotiated(const AttackContext& ctx) {
    auto g = running_guest(ctx, GuestConfig{});  // INDIRECT_DESC not negotiated
    auto* table = reinterpret_cast<VirtqDesc*>(g->scratch().data());
    table[0] = make_desc(g->frame_gpa(), g->frame_len(), 0, 0);
    g->desc(kTx, 0) = make_desc(gpa(g->scratch().data()), 16, VirtqDesc::kFlagIndirect, 0);
    publish_bad_chain(*g, 0, "an INDIRECT descriptor without INDIRECT_DESC negotiated");
}

GuestConfig with_indirect() {
    GuestConfig c;
    c.indirect = true;
    return c;
}

// One well-formed indirect chain must go through before the bad one.
void send_valid_indirect(HostileGuest& g) {
    auto* table = reinterpret_cast<VirtqDesc*>(g.scratch().data());
    table[0] = make_desc(g.frame_gpa(), HostileGuest::kNetHeaderBytes, VirtqDesc::kFlagNext, 1);
    table[1] =
        make_desc(g.frame_gpa() + HostileGuest::kNetHeaderBytes, HostileGuest::kFrameBytes, 0, 0);
    g.desc(kTx, 0) = make_desc(gpa(g.scratch().data()), 32, VirtqDesc::kFlagIndirect, 0);
    const uint16_t used_before = g.used_idx(kTx);
    g.publish_head(kTx, 0);
    g.kick(kTx);
    for (int i = 0; i < 300 && g.used_idx(kTx) == used_before; ++i) {
        std::this_thread::sleep_for(milliseconds(10));
    }
    if (g.used_idx(kTx) == used_before) {
        throw BackendMisbehaved("a valid indirect chain was not completed");
    }
    say("a valid 2-entry indirect table was completed");
}

void indirect_bad_length(const AttackContext& ctx) {
    auto g = running_guest(ctx, with_indirect());
    send_valid_indirect(*g);
    g->desc(kTx, 1) = make_desc(gpa(g->scratch().data()), 24, VirtqDesc::kFlagIndirect, 0);
    publish_bad_chain(*g, 1, "an indirect table of 24 bytes (not a multiple of 16)");
}

void indirect_nested(const AttackContext& ctx) {
    auto g = running_guest(ctx, with_indirect());
    send_valid_indirect(*g);
    auto* outer = reinterpret_cast<VirtqDesc*>(g->scratch().data() + 4096);
    auto* inner = reinterpret_cast<VirtqDesc*>(g->scratch().data() + 8192);
    inner[0] = make_desc(g->frame_gpa(), g->frame_len(), 0, 0);
    outer[0] = make_desc(gpa(g->scratch().data() + 8192), 16, VirtqDesc::kFlagIndirect, 0);
    g->desc(kTx, 1) = make_desc(gpa(g->scratch().data() + 4096), 16, VirtqDesc::kFlagIndirect, 0);
    publish_bad_chain(*g, 1, "an indirect table whose entry is itself INDIRECT");
}

void indirect_with_next(const AttackContext& ctx) {
    auto g = running_guest(ctx, with_indirect());
    auto* table = reinterpret_cast<VirtqDesc*>(g->scratch().data());
    table[0] = make_desc(g->frame_gpa(), g->frame_len(), 0, 0);
    g->desc(kTx, 0) =
        make_desc(gpa(g->scratch().data()), 16, VirtqDesc::kFlagIndirect | VirtqDesc::kFlagNext, 1);
    g->desc(kTx, 1) = make_desc(g->frame_gpa(), g->frame_len(), 0, 0);
    publish_bad_chain(*g, 0, "an INDIRECT descriptor that also has NEXT");
}

void indirect_too_large(const AttackContext& ctx) {
    auto g = running_guest(ctx, with_indirect());
    // 257 entries for a 256-entry queue (the table itself fits in scratch).
    const uint32_t len = 16 * (g->layout(kTx).size + 1);
    std::memset(g->scratch().data(), 0, len);
    g->desc(kTx, 0) = make_desc(gpa(g->scratch().data()), len, VirtqDesc::kFlagIndirect, 0);
    publish_bad_chain(*g, 0, "an indirect table of queue size + 1 entries");
}

constexpr Variant kBadIndirect[] = {
    {"not-negotiated", indirect_not_negotiated},
    {"bad-length", indirect_bad_length},
    {"nested", indirect_nested},
    {"with-next", indirect_with_next},
    {"too-large", indirect_too_large},
};

}  // namespace

void attack_bad_indirect(const AttackContext& ctx) {
    run_variants(ctx, kBadIndirect);
}

void attack_looping_chain(const AttackContext& ctx) {
    run_variants(ctx, kLoopingChain);
}

void attack_avail_index_jump(const AttackContext& ctx) {
    auto g = running_guest(ctx, GuestConfig{});
    const uint16_t size = g->layout(kTx).size;
    const uint16_t from = g->avail_idx(kTx);
    const auto to = static_cast<uint16_t>(from + size + 1);
    const uint16_t used_before = g->used_idx(kTx);
    g->set_avail_idx(kTx, to);
    g->kick(kTx);
    say("moved TX avail->idx from %u to %u (queue size %u) and kicked", from, to, size);
    std::this_thread::sleep_for(milliseconds(300));
    if (g->used_idx(kTx) != used_before) {
        say("back end completed %u used entries after the jump",
            static_cast<unsigned>(static_cast<uint16_t>(g->used_idx(kTx) - used_before)));
    }
    require_drop(g->socket_fd(), "an avail index jump of queue size + 1", kDropTimeout);
}

void attack_rx_readonly_buffer(const AttackContext& ctx) {
    constexpr uint8_t kPattern = 0x5a;
    constexpr uint32_t kBuffers = 4;
    constexpr uint32_t kBufferBytes = 2048;
    auto g = running_guest(ctx, GuestConfig{});
    std::byte* buffers = g->scratch().data();
    std::memset(buffers, kPattern, kBuffers * kBufferBytes);
    for (uint16_t i = 0; i < kBuffers; ++i) {
        // No VIRTQ_DESC_F_WRITE: the device may only read these.
        g->desc(kRx, i) = make_desc(gpa(buffers + i * kBufferBytes), kBufferBytes, 0, 0);
        g->publish_head(kRx, i);
    }
    g->kick(kRx);
    say("posted %u RX buffers without VIRTQ_DESC_F_WRITE and kicked", kBuffers);
    std::this_thread::sleep_for(milliseconds(1500));
    for (uint32_t i = 0; i < kBuffers * kBufferBytes; ++i) {
        if (static_cast<uint8_t>(buffers[i]) != kPattern) {
            throw BackendMisbehaved("back end wrote into a read-only RX buffer (byte " +
                                    std::to_string(i) + ")");
        }
    }
    if (g->used_idx(kRx) != 0) {
        throw BackendMisbehaved("back end returned read-only RX buffers as used");
    }
    say("the read-only buffers are untouched and none was returned as used");
    require_drop(g->socket_fd(), "RX buffers without VIRTQ_DESC_F_WRITE", kDropTimeout);
}

void attack_ring_state_rules(const AttackContext& ctx) {
    HostileGuest g(ctx.socket_path, GuestConfig{});
    g.negotiate();
    if (!g.reply_ack()) {
        throw std::runtime_error("this attack needs REPLY_ACK, which the back end does not offer");
    }
    const int sock = g.socket_fd();
    auto& s = g.session();

    // Rule 1: a refused memory table leaves the old one in place.
    g.set_mem_table();
    {
        GuestMemfd small(4096, Sealing::fixed_size);
        vhost_user::MemoryTable table{};
        table.nregions = 1;
        table.regions[0] = small.region();
        table.regions[0].memory_size = 1 << 20;
        const int fd = small.fd();
        require_refused(sock, Request::set_mem_table, &table, 8 + sizeof(table.regions[0]),
                        std::span(&fd, 1), "SET_MEM_TABLE: a 1 MiB region on a 4 KiB memfd");
    }

    // Rule 1: a refused ring size is not stored (DPDK stored it first).
    s.set_vring_call(kTx, g.call_fd(kTx));
    s.set_vring_num(kTx, g.layout(kTx).size);
    for (uint32_t bad : {1000u, 0u, 65536u}) {
        const vhost_user::VringState num{kTx, bad};
        const std::string what = "SET_VRING_NUM " + std::to_string(bad);
        require_refused(sock, Request::set_vring_num, &num, sizeof num, {}, what.c_str());
    }
    s.set_vring_base(kTx, 0);
    s.set_vring_addr(kTx, g.layout(kTx));
    s.set_vring_kick(kTx, g.kick_fd(kTx));
    g.start_ring(kRx);
    g.enable_rings();
    require_frames(g, 64, "on the table and size set before the refusals");

    // Rules 1 and 7: no resize, rebase or move of a running ring.
    const vhost_user::VringState resize{kTx, 128};
    require_refused(sock, Request::set_vring_num, &resize, sizeof resize, {},
                    "SET_VRING_NUM 128 on the running TX ring");
    const vhost_user::VringState rebase{kTx, 5};
    require_refused(sock, Request::set_vring_base, &rebase, sizeof rebase, {},
                    "SET_VRING_BASE 5 on the running TX ring");
    const auto& l = g.layout(kTx);
    const vhost_user::VringAddr moved{
        .index = kTx,
        .flags = 0,
        .desc_user_addr = reinterpret_cast<uintptr_t>(g.scratch().data()),
        .used_user_addr = reinterpret_cast<uintptr_t>(l.used),
        .avail_user_addr = reinterpret_cast<uintptr_t>(l.avail),
        .log_guest_addr = 0};
    require_refused(sock, Request::set_vring_addr, &moved, sizeof moved, {},
                    "SET_VRING_ADDR moving the running TX ring's descriptor table");
    // Features: ACCESS_PLATFORM is never offered (we have no IOMMU); no
    // change but LOG_ALL (live migration) while running.
    const uint64_t platform = g.negotiated().with(virtio::Feature::access_platform).bits();
    require_refused(sock, Request::set_features, &platform, sizeof platform, {},
                    "SET_FEATURES with ACCESS_PLATFORM (not offered)");
    const uint64_t changed = g.negotiated().with(virtio::Feature::ring_indirect_desc).bits();
    require_refused(sock, Request::set_features, &changed, sizeof changed, {},
                    "SET_FEATURES adding INDIRECT_DESC while the rings run");
    require_frames(g, 64, "after the refusals (ring unchanged)");

    // Rule 1: a ring stopped by GET_VRING_BASE runs again only after NUM,
    // BASE, ADDR and KICK.
    const uint32_t base = s.get_vring_base(kTx);
    say("GET_VRING_BASE stopped the TX ring at %u", base);
    if (base != g.ring(kTx).avail_shadow_idx()) {
        throw BackendMisbehaved("GET_VRING_BASE answered " + std::to_string(base) + ", expected " +
                                std::to_string(g.ring(kTx).avail_shadow_idx()));
    }
    const uint16_t used_stopped = g.used_idx(kTx);
    const uint64_t queued = g.queue_frames(8);
    s.set_vring_kick(kTx, g.kick_fd(kTx));
    g.kick(kTx);
    std::this_thread::sleep_for(milliseconds(1000));
    if (g.used_idx(kTx) != used_stopped) {
        throw BackendMisbehaved(
            "a ring stopped by GET_VRING_BASE ran again after SET_VRING_KICK "
            "alone");
    }
    say("after GET_VRING_BASE, SET_VRING_KICK alone did not restart the ring (%llu frames wait)",
        static_cast<unsigned long long>(queued));
    s.set_vring_num(kTx, g.layout(kTx).size);
    s.set_vring_base(kTx, base);
    s.set_vring_addr(kTx, g.layout(kTx));
    s.set_vring_kick(kTx, g.kick_fd(kTx));
    g.kick(kTx);
    const uint64_t done = g.wait_completions(queued, milliseconds(5000));
    if (done != queued) {
        throw BackendMisbehaved("after NUM, BASE, ADDR, KICK only " + std::to_string(done) +
                                " of " + std::to_string(queued) + " waiting frames completed");
    }
    say("after NUM, BASE, ADDR and KICK the %llu waiting frames completed",
        static_cast<unsigned long long>(done));
    require_frames(g, 64, "on the restarted ring");
}

// ---- packed rings (VIRTIO_F_RING_PACKED) ------------------------------------------

namespace {

// A guest on packed rings: HostileGuest's memory and fds, packed areas of
// its own. A few frames go through DriverPackedRing first (the ring moves),
// then the attack writes raw descriptors at the driver's next slot.
struct PackedGuest {
    std::unique_ptr<HostileGuest> g;
    frontend::DriverPackedRingLayout layouts[2];
    std::optional<frontend::DriverPackedRing> tx;
};

PackedGuest running_packed_guest(const AttackContext& ctx) {
    GuestConfig config;
    config.packed = true;
    PackedGuest p;
    p.g = std::make_unique<HostileGuest>(ctx.socket_path, config);
    HostileGuest& g = *p.g;
    g.negotiate();
    g.set_mem_table();
    for (uint32_t q : {kRx, kTx}) {
        // The packed areas live in the guest's scratch memory (64 KiB, page
        // aligned): 32 KiB each, far more than 256 slots need.
        const size_t bytes = frontend::packed_ring_storage_bytes(config.queue_size);
        auto storage = g.scratch().subspan(q * 32768u, bytes);
        p.layouts[q] = frontend::carve_packed_ring_layout(storage, config.queue_size);
        g.session().set_vring_call(q, g.call_fd(q));
        g.session().set_vring_num(q, config.queue_size);
        g.session().set_vring_base(q, 0x8000);  // slot 0, wrap counter 1: a fresh ring
        g.session().set_vring_addr(q, p.layouts[q]);
        g.session().set_vring_kick(q, g.kick_fd(q));
    }
    g.enable_rings();
    p.tx.emplace(p.layouts[kTx], false);
    constexpr uint16_t kWarmup = 8;
    for (uint16_t i = 0; i < kWarmup; ++i) {
        p.tx->add_buffer(g.frame_gpa(), g.frame_len(), frontend::BufferAccess::device_reads, i);
    }
    p.tx->publish();
    g.kick(kTx);
    uint16_t done = 0;
    for (int i = 0; i < 300 && done < kWarmup; ++i) {
        frontend::Completion out[kWarmup];
        frontend::UsedRingError error = frontend::UsedRingError::ok;
        done = static_cast<uint16_t>(done + p.tx->reclaim(out, &error));
        if (error != frontend::UsedRingError::ok) {
            throw BackendMisbehaved(std::string("packed TX used ring: ") +
                                    frontend::to_string(error));
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    if (done != kWarmup) {
        throw std::runtime_error("packed TX ring does not move before the attack (" +
                                 std::to_string(done) + " of 8 frames)");
    }
    say("packed rings running: %u frames sent and completed", kWarmup);
    return p;
}

// Flags that make a descriptor available for the lap `wrap` (§2.8.1), or,
// with `stale`, for the other lap.
uint16_t avail_flags(bool wrap, bool stale = false) {
    const bool w = stale ? !wrap : wrap;
    return static_cast<uint16_t>((w ? virtio::PackedDesc::kFlagAvail : 0) |
                                 (w ? 0 : virtio::PackedDesc::kFlagUsed));
}

void publish_bad_packed(PackedGuest& p, std::span<const virtio::PackedDesc> chain,
                        const char* what) {
    // Past the driver's books: the shared raw writer, on the same layout.
    frontend::RawPackedRingWriter(p.layouts[kTx]).publish_chain(p.tx->next_avail(), chain);
    p.g->kick(kTx);
    say("published %s on the packed TX ring and kicked", what);
    require_drop(p.g->socket_fd(), what, kDropTimeout);
}

void packed_stale_wrap(const AttackContext& ctx) {
    auto p = running_packed_guest(ctx);
    const bool wrap = p.tx->next_avail().wrap;
    const virtio::PackedDesc chain[] = {
        {p.g->frame_gpa(), 12, 0,
         static_cast<uint16_t>(virtio::PackedDesc::kFlagNext | avail_flags(wrap))},
        // The second descriptor still carries the previous lap's AVAIL/USED bits.
        {p.g->frame_gpa() + 12, 64, 0, avail_flags(wrap, /*stale=*/true)},
    };
    publish_bad_packed(p, chain, "a chain whose second descriptor has stale wrap bits");
}

void packed_id_out_of_range(const AttackContext& ctx) {
    auto p = running_packed_guest(ctx);
    const bool wrap = p.tx->next_avail().wrap;
    const virtio::PackedDesc chain[] = {
        {p.g->frame_gpa(), p.g->frame_len(), p.layouts[kTx].size, avail_flags(wrap)},
    };
    publish_bad_packed(p, chain, "a descriptor with buffer id == queue size");
}

void packed_chain_too_long(const AttackContext& ctx) {
    auto p = running_packed_guest(ctx);
    // Every slot of the ring with NEXT, each marked available for its own lap.
    const uint16_t size = p.layouts[kTx].size;
    std::vector<virtio::PackedDesc> chain(size);
    virtio::PackedPosition pos = p.tx->next_avail();
    for (uint16_t i = 0; i < size; ++i) {
        chain[i] = {p.g->frame_gpa(), 16, 0,
                    static_cast<uint16_t>(virtio::PackedDesc::kFlagNext | avail_flags(pos.wrap))};
        pos = virtio::advance(pos, 1, size);
    }
    publish_bad_packed(p, chain, "a chain of queue size descriptors, all with NEXT");
}

constexpr Variant kPackedRing[] = {
    {"stale-wrap", packed_stale_wrap},
    {"id-out-of-range", packed_id_out_of_range},
    {"chain-too-long", packed_chain_too_long},
};

}  // namespace

void attack_packed_ring(const AttackContext& ctx) {
    run_variants(ctx, kPackedRing);
}

}  // namespace vnet::hostile
