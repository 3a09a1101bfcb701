// Attacks on the memory table and on guest memory itself: rule 4 of
// reference/hostile-input-rules.md (regions against the file, overflow,
// seals, shrinking under the back end, offsets applied once) and the ring
// translation rule (CVE-2018-1059 class: each ring area inside one region).
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "hostile_attacks.hpp"
#include "hostile_guest.hpp"
#include "hostile_wire.hpp"
#include "vhost_user/connection.hpp"

namespace vnet::hostile {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using vhost_user::MemoryRegionDesc;
using vhost_user::Request;

constexpr milliseconds kDropTimeout{3000};
constexpr size_t kRegionBytes = 64 * 1024;

// Sends SET_MEM_TABLE with `regions` (the count field says `nregions`) and
// `fds`, without NEED_REPLY: a refusal must break the device and drop us.
void mem_table_expect_drop(const AttackContext& ctx, uint32_t nregions,
                           std::span<const MemoryRegionDesc> regions, std::span<const int> fds,
                           const char* what) {
    HostileGuest g(ctx.socket_path, GuestConfig{});
    g.negotiate();
    // Room for 9 regions: the count is the attack, not the buffer.
    std::array<uint8_t, 8 + 9 * sizeof(MemoryRegionDesc)> payload{};
    std::memcpy(payload.data(), &nregions, sizeof nregions);
    std::memcpy(payload.data() + 8, regions.data(), regions.size_bytes());
    const auto size = static_cast<uint32_t>(8 + regions.size_bytes());
    if (!send_request(g.socket_fd(), Request::set_mem_table, false, payload.data(), size, fds)) {
        throw BackendMisbehaved(std::string("connection gone before ") + what);
    }
    say("sent SET_MEM_TABLE: %s", what);
    require_drop(g.socket_fd(), what, kDropTimeout);
}

void beyond_file(const AttackContext& ctx) {
    GuestMemfd file(kRegionBytes, Sealing::fixed_size);
    MemoryRegionDesc r = file.region();
    r.memory_size = 2 * kRegionBytes;
    const int fd = file.fd();
    mem_table_expect_drop(ctx, 1, std::span(&r, 1), std::span(&fd, 1),
                          "a 128 KiB region on a 64 KiB memfd");
}

void offset_past_end(const AttackContext& ctx) {
    GuestMemfd file(kRegionBytes, Sealing::fixed_size);
    MemoryRegionDesc r = file.region();
    r.memory_size = 4096;
    r.mmap_offset = kRegionBytes;  // offset + size one page past the end
    const int fd = file.fd();
    mem_table_expect_drop(ctx, 1, std::span(&r, 1), std::span(&fd, 1),
                          "mmap_offset 64 KiB + size 4 KiB on a 64 KiB memfd");
}

void offset_overflow(const AttackContext& ctx) {
    GuestMemfd file(kRegionBytes, Sealing::fixed_size);
    MemoryRegionDesc r = file.region();
    r.memory_size = 0x2000;
    r.mmap_offset = 0xfffffffffffff000ull;  // offset + size wraps to 0x1000
    const int fd = file.fd();
    mem_table_expect_drop(ctx, 1, std::span(&r, 1), std::span(&fd, 1),
                          "mmap_offset 0xfffffffffffff000 + size 0x2000 (wraps)");
}

void overlapping(const AttackContext& ctx) {
    GuestMemfd a(kRegionBytes, Sealing::fixed_size);
    GuestMemfd b(kRegionBytes, Sealing::fixed_size);
    MemoryRegionDesc r[2] = {a.region(), b.region()};
    // b's guest range starts in the middle of a's.
    r[1].guest_phys_addr = r[0].guest_phys_addr + kRegionBytes / 2;
    const int fds[2] = {a.fd(), b.fd()};
    mem_table_expect_drop(ctx, 2, r, fds, "two regions whose guest ranges overlap by 32 KiB");
}

void nine_regions(const AttackContext& ctx) {
    std::vector<std::unique_ptr<GuestMemfd>> files;
    std::array<MemoryRegionDesc, 9> r{};
    std::array<int, 8> fds{};
    for (size_t i = 0; i < 9; ++i) {
        files.push_back(std::make_unique<GuestMemfd>(4096, Sealing::fixed_size));
        r[i] = files.back()->region();
        if (i < 8) {
            fds[i] = files.back()->fd();
        }
    }
    mem_table_expect_drop(ctx, 9, r, fds,
                          "nregions 9 (9 regions, 8 fds: the most a message carries)");
}

void fewer_fds(const AttackContext& ctx) {
    GuestMemfd a(kRegionBytes, Sealing::fixed_size);
    GuestMemfd b(kRegionBytes, Sealing::fixed_size);
    MemoryRegionDesc r[2] = {a.region(), b.region()};
    const int fd = a.fd();
    mem_table_expect_drop(ctx, 2, r, std::span(&fd, 1), "nregions 2 with 1 fd");
}

void more_fds(const AttackContext& ctx) {
    GuestMemfd a(kRegionBytes, Sealing::fixed_size);
    GuestMemfd b(kRegionBytes, Sealing::fixed_size);
    MemoryRegionDesc r = a.region();
    const int fds[3] = {a.fd(), b.fd(), b.fd()};
    mem_table_expect_drop(ctx, 1, std::span(&r, 1), fds, "nregions 1 with 3 fds");
}

void not_a_file(const AttackContext& ctx) {
    GuestMemfd a(kRegionBytes, Sealing::fixed_size);
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
        throw std::runtime_error("pipe");
    }
    UniqueFd rd(p[0]), wr(p[1]);
    MemoryRegionDesc r = a.region();
    const int fd = rd.get();
    mem_table_expect_drop(ctx, 1, std::span(&r, 1), std::span(&fd, 1),
                          "a region whose fd is a pipe");
}

void shrinkable_seals(const AttackContext& ctx) {
    GuestMemfd a(kRegionBytes, Sealing::grow_only);
    MemoryRegionDesc r = a.region();
    const int fd = a.fd();
    mem_table_expect_drop(ctx, 1, std::span(&r, 1), std::span(&fd, 1),
                          "a memfd sealed with F_SEAL_GROW but not F_SEAL_SHRINK");
}

constexpr Variant kBadMemTable[] = {
    {"beyond-file", beyond_file},
    {"offset-past-end", offset_past_end},
    {"offset-overflow", offset_overflow},
    {"overlap", overlapping},
    {"nine-regions", nine_regions},
    {"fewer-fds", fewer_fds},
    {"more-fds", more_fds},
    {"not-a-file", not_a_file},
    {"shrinkable-seals", shrinkable_seals},
};

// ---- ring-outside-memory -------------------------------------------------------

vhost_user::VringAddr tx_addr(const HostileGuest& g) {
    const auto& l = g.layout(HostileGuest::kTx);
    return {.index = HostileGuest::kTx,
            .flags = 0,
            .desc_user_addr = reinterpret_cast<uintptr_t>(l.desc),
            .used_user_addr = reinterpret_cast<uintptr_t>(l.used),
            .avail_user_addr = reinterpret_cast<uintptr_t>(l.avail),
            .log_guest_addr = 0};
}

void send_tx_ring_setup(HostileGuest& g, const vhost_user::VringAddr& addr) {
    auto& s = g.session();
    s.set_vring_call(HostileGuest::kTx, g.call_fd(HostileGuest::kTx));
    s.set_vring_num(HostileGuest::kTx, g.layout(HostileGuest::kTx).size);
    s.set_vring_base(HostileGuest::kTx, 0);
    // Raw: the ring is translated only when it starts, so this is accepted.
    send_request(g.socket_fd(), Request::set_vring_addr, false, &addr, sizeof addr);
}

// Sets up the TX ring with the address `make` returns and kicks it (raw, no
// NEED_REPLY): the ring starts at KICK, is translated then, and the device
// must break.
void ring_addr_expect_drop(const AttackContext& ctx,
                           vhost_user::VringAddr (*make)(const HostileGuest&), const char* what) {
    HostileGuest g(ctx.socket_path, GuestConfig{});
    g.negotiate();
    g.set_mem_table();
    send_tx_ring_setup(g, make(g));
    const uint64_t kick = HostileGuest::kTx;
    const int fd = g.kick_fd(HostileGuest::kTx);
    send_request(g.socket_fd(), Request::set_vring_kick, false, &kick, sizeof kick,
                 std::span(&fd, 1));
    g.kick(HostileGuest::kTx);
    say("sent SET_VRING_ADDR with %s, then SET_VRING_KICK", what);
    require_drop(g.socket_fd(), "SET_VRING_KICK of a ring not inside guest memory", kDropTimeout);
}

vhost_user::VringAddr far_away(const HostileGuest& g) {
    const auto region = g.memory().region();
    const uint64_t far = region.userspace_addr + region.memory_size + (64ull << 30);
    vhost_user::VringAddr a = tx_addr(g);
    a.desc_user_addr = far;
    a.avail_user_addr = far + 0x1000;
    a.used_user_addr = far + 0x2000;
    return a;
}

vhost_user::VringAddr used_crossing_end(const HostileGuest& g) {
    // The used ring needs 6 + 8 * 256 bytes; it starts 64 bytes before the end.
    const auto region = g.memory().region();
    vhost_user::VringAddr a = tx_addr(g);
    a.used_user_addr = region.userspace_addr + region.memory_size - 64;
    return a;
}

void ring_outside(const AttackContext& ctx) {
    ring_addr_expect_drop(ctx, far_away, "all three ring areas 64 GiB past the only region");
}

void ring_straddle(const AttackContext& ctx) {
    ring_addr_expect_drop(ctx, used_crossing_end,
                          "the used ring starting 64 bytes before the region ends");
}

void addr_before_table(const AttackContext& ctx) {
    // A ring may be set up before any memory table (DPDK allows it): then the
    // check must happen when the table arrives.
    HostileGuest g(ctx.socket_path, GuestConfig{});
    g.negotiate();
    send_tx_ring_setup(g, far_away(g));
    g.session().set_vring_kick(HostileGuest::kTx,
                               g.kick_fd(HostileGuest::kTx));  // acked: no memory yet
    const auto region = g.memory().region();
    const int fd = g.memory().fd();
    vhost_user::MemoryTable table{};
    table.nregions = 1;
    table.regions[0] = region;
    send_request(g.socket_fd(), Request::set_mem_table, false, &table, 8 + sizeof region,
                 std::span(&fd, 1));
    say("set up and kicked the TX ring at addresses outside memory, then sent SET_MEM_TABLE");
    require_drop(g.socket_fd(), "SET_MEM_TABLE that leaves a started ring outside memory",
                 kDropTimeout);
}

constexpr Variant kRingOutsideMemory[] = {
    {"outside", ring_outside},
    {"straddle", ring_straddle},
    {"addr-before-table", addr_before_table},
};

void require_tx_moves(HostileGuest& g, const char* when) {
    const uint64_t done = g.send_frames(32, milliseconds(5000));
    if (done != 32) {
        throw BackendMisbehaved("only " + std::to_string(done) + " of 32 frames completed " + when);
    }
    say("32 frames completed %s", when);
}

}  // namespace

void attack_bad_mem_table(const AttackContext& ctx) {
    run_variants(ctx, kBadMemTable);
}

void attack_ring_outside_memory(const AttackContext& ctx) {
    run_variants(ctx, kRingOutsideMemory);
}

namespace {

// A front end with a truncatable memfd, brought up, whose TX ring moved.
std::unique_ptr<HostileGuest> shrinkable_guest(const AttackContext& ctx) {
    GuestConfig config;
    config.sealing = Sealing::none;  // a file we can truncate under the back end
    auto g = std::make_unique<HostileGuest>(ctx.socket_path, config);
    g->bring_up();
    const uint64_t warmup = g->send_frames(64, milliseconds(3000));
    if (warmup != 64) {
        throw std::runtime_error("TX ring does not move before the attack (" +
                                 std::to_string(warmup) + " of 64 frames)");
    }
    return g;
}

void truncate_all(HostileGuest& g) {
    g.memory().truncate_file(0);
    g.forget_memory();
}

// While the back end reads the TX ring: its next access faults on a worker.
void shrink_while_reading(const AttackContext& ctx) {
    for (unsigned round = 1; round <= ctx.repeat; ++round) {
        auto g = shrinkable_guest(ctx);
        // Stagger the moment of truncation from round to round.
        const auto pump = milliseconds(300 + 97 * (round % 7));
        const uint64_t pumped = g->pump_until(Clock::now() + pump);
        truncate_all(*g);
        say("round %u/%u: %llu frames moved in %lld ms with the ring kept full, then the memfd "
            "was truncated to 0 bytes",
            round, ctx.repeat, static_cast<unsigned long long>(pumped),
            static_cast<long long>(pump.count()));
        require_drop(g->socket_fd(), "truncating guest memory under the TX ring", kDropTimeout);
    }
}

// Truncate an idle ring and hang up at once: the back end's teardown (which
// finishes the rings) must not be what touches the lost memory.
void shrink_then_close(const AttackContext& ctx) {
    for (unsigned round = 1; round <= ctx.repeat; ++round) {
        auto g = shrinkable_guest(ctx);
        truncate_all(*g);
        g.reset();
        say("round %u/%u: truncated the memfd under idle running rings and disconnected at once",
            round, ctx.repeat);
        std::this_thread::sleep_for(milliseconds(200));
    }
}

// Truncate an idle ring and stop it the orderly way (GET_VRING_BASE, which
// has its own reply): answered, or the device breaks; never a dead daemon.
void shrink_then_stop(const AttackContext& ctx) {
    for (unsigned round = 1; round <= ctx.repeat; ++round) {
        auto g = shrinkable_guest(ctx);
        truncate_all(*g);
        const vhost_user::VringState state{HostileGuest::kTx, 0};
        send_request(g->socket_fd(), Request::get_vring_base, false, &state, sizeof state);
        vhost_user::Message reply;
        const auto r = vhost_user::receive_message(g->socket_fd(), reply, kDropTimeout);
        if (r == vhost_user::ReceiveResult::message) {
            vhost_user::VringState answer{};
            reply.read_payload(answer);
            say("round %u/%u: truncated, then GET_VRING_BASE: answered (vring %u at %u)", round,
                ctx.repeat, answer.index, answer.num);
        } else if (r == vhost_user::ReceiveResult::peer_closed) {
            say("round %u/%u: truncated, then GET_VRING_BASE: connection closed", round,
                ctx.repeat);
        } else {
            throw BackendMisbehaved(std::string("GET_VRING_BASE after truncation: ") +
                                    vhost_user::to_string(r));
        }
    }
}

constexpr Variant kShrinkMemfd[] = {
    {"while-reading", shrink_while_reading},
    {"then-close", shrink_then_close},
    {"then-stop", shrink_then_stop},
};

}  // namespace

void attack_shrink_memfd(const AttackContext& ctx) {
    run_variants(ctx, kShrinkMemfd);
}

void attack_mmap_offset_once(const AttackContext& ctx) {
    // Three pages and 256 bytes of file before the region: the back end maps
    // from a page boundary and must add the remaining 256 bytes, once.
    constexpr size_t kLead = 3 * 4096 + 256;
    constexpr uint64_t kFrames = 2000;
    GuestConfig config;
    config.lead = kLead;
    HostileGuest g(ctx.socket_path, config);
    g.bring_up();
    say("memory table: one region at mmap_offset %zu (not page aligned)", kLead);
    const uint64_t done = g.send_frames(kFrames, milliseconds(10000));
    say("%llu of %llu frames completed through rings placed behind the offset",
        static_cast<unsigned long long>(done), static_cast<unsigned long long>(kFrames));
    if (done != kFrames) {
        throw BackendMisbehaved("only " + std::to_string(done) + " of " + std::to_string(kFrames) +
                                " frames completed with mmap_offset " + std::to_string(kLead));
    }
    if (!g.memory().lead_intact()) {
        throw BackendMisbehaved("back end wrote into the file bytes before the region");
    }
    say("the %zu bytes of file before the region are untouched", kLead);
}

void attack_repeated_mem_table(const AttackContext& ctx) {
    // CVE-2019-14818 class: every accepted table replaces the last one; its
    // fds and mappings must not pile up.
    constexpr int kTables = 500;
    HostileGuest g(ctx.socket_path, GuestConfig{});
    g.bring_up();
    if (!g.reply_ack()) {
        throw std::runtime_error("this attack needs REPLY_ACK, which the back end does not offer");
    }
    require_tx_moves(g, "before the tables");
    long fds_first = -1, maps_first = -1;
    const auto start = Clock::now();
    for (int i = 0; i < kTables; ++i) {
        GuestMemfd extra(kRegionBytes, Sealing::fixed_size);
        vhost_user::MemoryTable table{};
        table.nregions = 2;
        table.regions[0] = g.memory().region();
        table.regions[1] = extra.region();
        const int fds[2] = {g.memory().fd(), extra.fd()};
        if (!send_request(g.socket_fd(), Request::set_mem_table, true, &table,
                          8 + 2 * sizeof(MemoryRegionDesc), fds)) {
            throw BackendMisbehaved("connection dropped at memory table " + std::to_string(i));
        }
        const uint64_t status = read_ack(g.socket_fd(), Request::set_mem_table, milliseconds(5000));
        if (status != 0) {
            throw BackendMisbehaved("valid memory table " + std::to_string(i) + " refused");
        }
        if (i == 0 && ctx.watch_pid != 0) {
            fds_first = count_fds(ctx.watch_pid);
            maps_first = count_shared_maps(ctx.watch_pid);
        }
    }
    const auto ms = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
    say("%d two-region memory tables accepted in %lld ms, each with a fresh memfd", kTables,
        static_cast<long long>(ms));
    require_tx_moves(g, "on the last table");
    if (ctx.watch_pid != 0) {
        const long fds_last = count_fds(ctx.watch_pid);
        const long maps_last = count_shared_maps(ctx.watch_pid);
        say("back end fds %ld -> %ld, shared mappings %ld -> %ld (after table 1 -> after table %d)",
            fds_first, fds_last, maps_first, maps_last, kTables);
        if (fds_last != fds_first || maps_last > maps_first) {
            throw BackendMisbehaved("back end fds or mappings grew over repeated memory tables");
        }
    }
}

}  // namespace vnet::hostile
