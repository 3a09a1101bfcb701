// Attacks on framing, fds and connections: rules 2, 3, 5 and 6 of
// reference/hostile-input-rules.md, and DPDK's CVE-2019-14818,
// CVE-2020-10723 and CVE-2022-0669 classes (reference/dpdk-vhost.md §3).
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "hostile_attacks.hpp"
#include "hostile_guest.hpp"
#include "hostile_wire.hpp"
#include "io/eventfd.hpp"

namespace vnet::hostile {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using vhost_user::MessageHeader;
using vhost_user::Request;

constexpr milliseconds kConnectTimeout{20000};
constexpr milliseconds kDropTimeout{3000};

long long elapsed_ms(Clock::time_point since) {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - since).count();
}

// A regular file that is not an eventfd: an unlinked file in /tmp, or a memfd.
UniqueFd regular_file() {
    UniqueFd fd(::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (!fd) {
        fd.reset(::memfd_create("vnet-hostile-file", MFD_CLOEXEC));
    }
    if (!fd) {
        throw std::runtime_error(std::string("regular file: ") + std::strerror(errno));
    }
    return fd;
}

struct Pipe {
    UniqueFd read_end;
    UniqueFd write_end;
    Pipe() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
        }
        read_end.reset(fds[0]);
        write_end.reset(fds[1]);
    }
};

// A negotiated front end (REPLY_ACK taken) with its memory table sent: the
// state in which vring fds are normally handed over.
std::unique_ptr<HostileGuest> negotiated_guest(const AttackContext& ctx, bool with_memory) {
    auto g = std::make_unique<HostileGuest>(ctx.socket_path, GuestConfig{});
    g->negotiate();
    if (with_memory) {
        g->set_mem_table();
    }
    return g;
}

void require_reply_ack(const HostileGuest& g) {
    if (!g.reply_ack()) {
        throw std::runtime_error("this attack needs REPLY_ACK, which the back end does not offer");
    }
}

// ---- call-not-eventfd ------------------------------------------------------------

void send_vring_fd_expect_drop(const AttackContext& ctx, Request request, uint32_t index, int fd,
                               const char* what) {
    auto g = negotiated_guest(ctx, true);
    const uint64_t payload = index;
    const int fds[1] = {fd};
    if (!send_request(g->socket_fd(), request, false, &payload, sizeof payload, fds)) {
        throw BackendMisbehaved(std::string("connection gone before ") + what);
    }
    say("sent %s", what);
    require_drop(g->socket_fd(), what, kDropTimeout);
}

void call_pipe(const AttackContext& ctx) {
    Pipe p;
    send_vring_fd_expect_drop(ctx, Request::set_vring_call, HostileGuest::kRx, p.write_end.get(),
                              "SET_VRING_CALL (vring 0) with the write end of a pipe");
}

void call_file(const AttackContext& ctx) {
    UniqueFd f = regular_file();
    send_vring_fd_expect_drop(ctx, Request::set_vring_call, HostileGuest::kTx, f.get(),
                              "SET_VRING_CALL (vring 1) with a regular file");
}

void kick_pipe(const AttackContext& ctx) {
    Pipe p;
    send_vring_fd_expect_drop(ctx, Request::set_vring_kick, HostileGuest::kTx, p.read_end.get(),
                              "SET_VRING_KICK (vring 1) with the read end of a pipe");
}

void err_socket(const AttackContext& ctx) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        throw std::runtime_error("socketpair");
    }
    UniqueFd a(pair[0]), b(pair[1]);
    send_vring_fd_expect_drop(ctx, Request::set_vring_err, HostileGuest::kRx, a.get(),
                              "SET_VRING_ERR (vring 0) with a unix socket");
}

constexpr Variant kCallNotEventfd[] = {
    {"call-pipe", call_pipe},
    {"call-file", call_file},
    {"kick-pipe", kick_pipe},
    {"err-socket", err_socket},
};

// ---- oversized-payload -----------------------------------------------------------

void huge_payload(const AttackContext& ctx) {
    UniqueFd s = connect_admitted(ctx.socket_path, kConnectTimeout);
    const MessageHeader h{static_cast<uint32_t>(Request::set_mem_table), MessageHeader::kVersion,
                          0x10000};
    send_bytes(s.get(), &h, sizeof h);
    // Then as much of the promised payload as it will take, as a real attacker would.
    std::vector<uint8_t> filler(0x10000, 0xee);
    const bool all_sent = send_bytes(s.get(), filler.data(), filler.size());
    say("sent a SET_MEM_TABLE header announcing 0x10000 payload bytes (%s)",
        all_sent ? "and all of them" : "the back end stopped taking the payload");
    require_drop(s.get(), "a header with size 0x10000", kDropTimeout);
}

void size_mismatch(const AttackContext& ctx) {
    auto g = negotiated_guest(ctx, false);
    const uint32_t payload[3] = {HostileGuest::kTx, 256, 0};
    send_request(g->socket_fd(), Request::set_vring_num, false, payload, sizeof payload);
    say("sent SET_VRING_NUM with a 12-byte payload (8 expected)");
    require_drop(g->socket_fd(), "SET_VRING_NUM with a 12-byte payload", kDropTimeout);
}

void bad_version(const AttackContext& ctx) {
    UniqueFd s = connect_admitted(ctx.socket_path, kConnectTimeout);
    send_request_raw(s.get(), static_cast<uint32_t>(Request::get_features), 0x2, nullptr, 0, {});
    say("sent GET_FEATURES with header version 2");
    require_drop(s.get(), "a header with version 2", kDropTimeout);
}

constexpr Variant kOversizedPayload[] = {
    {"huge", huge_payload},
    {"size-mismatch", size_mismatch},
    {"bad-version", bad_version},
};

// ---- unread-replies --------------------------------------------------------------

void flood_unread(const AttackContext& ctx) {
    UniqueFd s = connect_admitted(ctx.socket_path, kConnectTimeout);
    constexpr size_t kChunk = 256;
    constexpr size_t kMaxRequests = 400000;
    std::vector<MessageHeader> chunk(
        kChunk,
        MessageHeader{static_cast<uint32_t>(Request::get_features), MessageHeader::kVersion, 0});
    size_t sent = 0;
    const auto start = Clock::now();
    while (sent < kMaxRequests) {
        if (!send_bytes(s.get(), chunk.data(), chunk.size() * sizeof(MessageHeader))) {
            say("send failed after %zu GET_FEATURES whose replies we never read: %s", sent,
                std::strerror(errno));
            break;
        }
        sent += kChunk;
        pollfd p{s.get(), POLLRDHUP, 0};
        if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP)) != 0) {
            say("back end shut the connection after %zu unread requests (%lld ms)", sent,
                elapsed_ms(start));
            break;
        }
    }
    if (sent >= kMaxRequests) {
        throw BackendMisbehaved("back end kept queueing replies for " +
                                std::to_string(kMaxRequests) + " unread requests");
    }
    require_drop(s.get(), "a flood of requests whose replies are never read", kDropTimeout);
}

void ask_and_vanish(const AttackContext& ctx) {
    UniqueFd s = connect_admitted(ctx.socket_path, kConnectTimeout);
    std::vector<MessageHeader> requests;
    for (int i = 0; i < 1000; ++i) {
        requests.push_back(
            {static_cast<uint32_t>(Request::get_features), MessageHeader::kVersion, 0});
        requests.push_back(
            {static_cast<uint32_t>(Request::get_protocol_features), MessageHeader::kVersion, 0});
    }
    send_bytes(s.get(), requests.data(), requests.size() * sizeof(MessageHeader));
    s.reset();
    say("sent 2000 requests that have replies and closed at once (replies go to a dead socket)");
}

constexpr Variant kUnreadReplies[] = {
    {"flood", flood_unread},
    {"vanish", ask_and_vanish},
};

}  // namespace

void attack_call_not_eventfd(const AttackContext& ctx) {
    run_variants(ctx, kCallNotEventfd);
}

void attack_oversized_payload(const AttackContext& ctx) {
    run_variants(ctx, kOversizedPayload);
}

void attack_unread_replies(const AttackContext& ctx) {
    run_variants(ctx, kUnreadReplies);
}

void attack_half_message(const AttackContext& ctx) {
    UniqueFd s = connect_admitted(ctx.socket_path, kConnectTimeout);
    const MessageHeader h{static_cast<uint32_t>(Request::get_features), MessageHeader::kVersion, 0};
    if (!send_bytes(s.get(), &h, 6)) {
        throw std::runtime_error("could not send the half header");
    }
    const auto start = Clock::now();
    say("sent 6 of the 12 header bytes of GET_FEATURES; stalling %lld s",
        static_cast<long long>(ctx.stall.count()));

    // While we stall, the control thread must still work: a second front end
    // is accepted and, the socket's one slot being ours, closed at once.
    std::this_thread::sleep_for(milliseconds(1000));
    int err = 0;
    UniqueFd second = connect_once(ctx.socket_path, false, &err);
    if (!second) {
        say("a second connection during the stall failed: %s", std::strerror(err));
    } else if (wait_for_close(second.get(), milliseconds(2000))) {
        say("a second connection during the stall was turned away at once (control thread alive)");
    } else {
        say("a second connection during the stall was admitted and kept open");
    }
    second.reset();

    const auto end = start + ctx.stall;
    const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now());
    if (left.count() > 0 && wait_for_close(s.get(), left)) {
        say("back end closed the stalled connection after %lld ms", elapsed_ms(start));
    } else {
        say("back end kept waiting for the rest of the header for %lld ms", elapsed_ms(start));
    }
    s.reset();
    say("disconnected with the message still incomplete");
}

void attack_connection_flood(const AttackContext& ctx) {
    constexpr int kConnections = 200;
    const long fds_before = ctx.watch_pid != 0 ? count_fds(ctx.watch_pid) : -1;
    std::vector<UniqueFd> conns;
    const auto deadline = Clock::now() + std::chrono::seconds(15);
    unsigned retries = 0;
    while (static_cast<int>(conns.size()) < kConnections) {
        int err = 0;
        UniqueFd fd = connect_once(ctx.socket_path, true, &err);
        if (fd) {
            conns.push_back(std::move(fd));
            continue;
        }
        if (err != EAGAIN || Clock::now() >= deadline) {
            throw std::runtime_error("connect #" + std::to_string(conns.size() + 1) + ": " +
                                     std::strerror(err));
        }
        ++retries;  // the listen backlog is full: the back end is accepting
        std::this_thread::sleep_for(milliseconds(2));
    }
    say("%d connections open at once (%u connects retried on a full backlog)", kConnections,
        retries);
    std::this_thread::sleep_for(milliseconds(1000));
    int closed = 0;
    for (const UniqueFd& c : conns) {
        closed += wait_for_close(c.get(), milliseconds(0)) ? 1 : 0;
    }
    const int held = kConnections - closed;
    say("after 1 s the back end had closed %d and holds %d", closed, held);
    if (held >= kConnections) {
        throw BackendMisbehaved("back end holds every one of " + std::to_string(kConnections) +
                                " connections (no per-socket bound)");
    }
    if (fds_before >= 0) {
        const long fds_during = count_fds(ctx.watch_pid);
        say("back end fds: %ld before, %ld while we hold %d connections", fds_before, fds_during,
            kConnections);
        if (fds_during > fds_before + held) {
            throw BackendMisbehaved("back end keeps fds of connections it turned away");
        }
    }
    std::this_thread::sleep_for(milliseconds(1000));
    conns.clear();
    say("closed all %d connections", kConnections);
}

void attack_rejected_fds_stream(const AttackContext& ctx) {
    constexpr int kMessages = 10000;
    constexpr int kWindow = 32;  // requests in flight before their acks are read
    auto g = negotiated_guest(ctx, false);
    require_reply_ack(*g);
    const int sock = g->socket_fd();

    std::vector<UniqueFd> eventfds;
    std::vector<std::unique_ptr<GuestMemfd>> files;
    std::array<int, 8> event_raw{}, file_raw{};
    vhost_user::MemoryTable table{};
    table.nregions = 8;
    for (size_t i = 0; i < 8; ++i) {
        eventfds.push_back(io::make_eventfd());
        event_raw[i] = eventfds.back().get();
        files.push_back(std::make_unique<GuestMemfd>(4096, Sealing::fixed_size));
        file_raw[i] = files.back()->fd();
        // A 4 KiB file, a 1 MiB region: refused (rule 4), with its 8 fds (rule 3).
        table.regions[i] = files.back()->region();
        table.regions[i].memory_size = 1 << 20;
    }
    const uint32_t table_size = sizeof(uint32_t) * 2 + 8 * sizeof(vhost_user::MemoryRegionDesc);

    const long fds_before = ctx.watch_pid != 0 ? count_fds(ctx.watch_pid) : -1;
    const long maps_before = ctx.watch_pid != 0 ? count_shared_maps(ctx.watch_pid) : -1;
    int refused = 0, accepted = 0;
    long fds_sent = 0;
    const auto start = Clock::now();
    // Three kinds in turn: fds on a request that takes none (SET_OWNER, 8 fds);
    // a refused memory table (8 fds); SET_LOG_FD, accepted and its fd dropped.
    auto kind_of = [](int i) { return i % 3; };
    for (int base = 0; base < kMessages; base += kWindow) {
        const int end = std::min(kMessages, base + kWindow);
        for (int i = base; i < end; ++i) {
            bool ok = false;
            switch (kind_of(i)) {
                case 0:
                    ok = send_request(sock, Request::set_owner, true, nullptr, 0, event_raw);
                    break;
                case 1:
                    ok = send_request(sock, Request::set_mem_table, true, &table, table_size,
                                      file_raw);
                    break;
                default:
                    ok = send_request(sock, Request::set_log_fd, true, nullptr, 0,
                                      std::span<const int>(event_raw.data(), 1));
                    break;
            }
            fds_sent += kind_of(i) == 2 ? 1 : 8;
            if (!ok) {
                throw BackendMisbehaved("connection dropped at message " + std::to_string(i) +
                                        " of the fd stream: " + std::strerror(errno));
            }
        }
        for (int i = base; i < end; ++i) {
            const Request r = kind_of(i) == 0   ? Request::set_owner
                              : kind_of(i) == 1 ? Request::set_mem_table
                                                : Request::set_log_fd;
            const uint64_t status = read_ack(sock, r, milliseconds(5000));
            const bool should_refuse = kind_of(i) != 2;
            if ((status != 0) != should_refuse) {
                throw BackendMisbehaved(std::string(vhost_user::to_string(r)) + " message " +
                                        std::to_string(i) + ": ack status " +
                                        std::to_string(status));
            }
            (status != 0 ? refused : accepted) += 1;
        }
    }
    say("%d messages carrying %ld fds in %lld ms: %d refused, %d accepted (fd dropped)", kMessages,
        fds_sent, elapsed_ms(start), refused, accepted);
    if (fds_before >= 0) {
        const long fds_after = count_fds(ctx.watch_pid);
        const long maps_after = count_shared_maps(ctx.watch_pid);
        say("back end fds %ld -> %ld, shared mappings %ld -> %ld (connection still open)",
            fds_before, fds_after, maps_before, maps_after);
        if (fds_after != fds_before) {
            throw BackendMisbehaved("back end fd count changed from " + std::to_string(fds_before) +
                                    " to " + std::to_string(fds_after) + " over the fd stream");
        }
        if (maps_after > maps_before) {
            throw BackendMisbehaved("back end mappings grew over the fd stream");
        }
    }
}

void attack_too_many_fds(const AttackContext& ctx) {
    constexpr size_t kFds = 64;
    UniqueFd s = connect_admitted(ctx.socket_path, kConnectTimeout);
    std::vector<UniqueFd> owned;
    std::vector<int> raw;
    for (size_t i = 0; i < kFds; ++i) {
        owned.push_back(io::make_eventfd());
        raw.push_back(owned.back().get());
    }
    const long fds_before = ctx.watch_pid != 0 ? count_fds(ctx.watch_pid) : -1;
    vhost_user::MemoryTable table{};
    table.nregions = 8;
    send_request_raw(s.get(), static_cast<uint32_t>(Request::set_mem_table),
                     MessageHeader::kVersion, &table, sizeof table, raw);
    say("sent SET_MEM_TABLE with %zu fds attached (the protocol allows 8)", kFds);
    require_drop(s.get(), "a message with 64 fds", kDropTimeout);
    if (fds_before >= 0) {
        std::this_thread::sleep_for(milliseconds(200));
        const long fds_after = count_fds(ctx.watch_pid);
        say("back end fds: %ld with our connection, %ld after it was dropped", fds_before,
            fds_after);
        if (fds_after >= fds_before) {
            throw BackendMisbehaved("back end kept fds from the oversized SCM_RIGHTS message");
        }
    }
}

void attack_bad_vring_index(const AttackContext& ctx) {
    auto g = negotiated_guest(ctx, true);
    const int sock = g->socket_fd();
    // CVE-2020-10723: the index is a u32 and must be checked as one; 65537
    // truncated to u16 is 1, a valid ring.
    if (g->reply_ack()) {
        const vhost_user::VringState num{300, 256};
        require_refused(sock, Request::set_vring_num, &num, sizeof num, {},
                        "SET_VRING_NUM for vring 300");
        const vhost_user::VringState base{65537, 0};
        require_refused(sock, Request::set_vring_base, &base, sizeof base, {},
                        "SET_VRING_BASE for vring 65537 (1 as a u16)");
        const auto& l = g->layout(HostileGuest::kTx);
        const vhost_user::VringAddr addr{.index = 0x10001,
                                         .flags = 0,
                                         .desc_user_addr = reinterpret_cast<uintptr_t>(l.desc),
                                         .used_user_addr = reinterpret_cast<uintptr_t>(l.used),
                                         .avail_user_addr = reinterpret_cast<uintptr_t>(l.avail),
                                         .log_guest_addr = 0};
        require_refused(sock, Request::set_vring_addr, &addr, sizeof addr, {},
                        "SET_VRING_ADDR for vring 0x10001");
        const vhost_user::VringState enable{0xffffffff, 1};
        require_refused(sock, Request::set_vring_enable, &enable, sizeof enable, {},
                        "SET_VRING_ENABLE for vring 0xffffffff");
        UniqueFd kick = io::make_eventfd();
        const int kick_fd[1] = {kick.get()};
        const uint64_t kick_index = 255;
        require_refused(sock, Request::set_vring_kick, &kick_index, sizeof kick_index, kick_fd,
                        "SET_VRING_KICK for vring 255");
        const uint64_t call_index = 0x100000001ull;  // reserved bits + vring 1
        require_refused(sock, Request::set_vring_call, &call_index, sizeof call_index, kick_fd,
                        "SET_VRING_CALL with reserved bits above the index");
    }
    // Without NEED_REPLY the front end cannot be told: the device must break.
    const vhost_user::VringState num{300, 256};
    send_request(sock, Request::set_vring_num, false, &num, sizeof num);
    say("sent SET_VRING_NUM for vring 300 without NEED_REPLY");
    require_drop(sock, "SET_VRING_NUM for vring 300", kDropTimeout);
}

void attack_unnegotiated_request(const AttackContext& ctx) {
    GuestConfig config;  // REPLY_ACK only: no CONFIGURE_MEM_SLOTS, no INFLIGHT_SHMFD
    HostileGuest g(ctx.socket_path, config);
    g.negotiate();
    require_reply_ack(g);
    const int sock = g.socket_fd();
    GuestMemfd extra(64 * 1024, Sealing::fixed_size);
    const vhost_user::SingleMemoryRegion add{0, extra.region()};
    const int add_fd[1] = {extra.fd()};
    require_refused(sock, Request::add_mem_reg, &add, sizeof add, add_fd,
                    "ADD_MEM_REG without CONFIGURE_MEM_SLOTS negotiated");

    // DPDK zero-filled a memfd of whatever size GET_INFLIGHT_FD asked for,
    // without the feature: ask for 1 TiB.
    struct Inflight {
        uint64_t mmap_size;
        uint64_t mmap_offset;
        uint16_t num_queues;
        uint16_t queue_size;
        uint32_t padding;
    } inflight{uint64_t{1} << 40, 0, 0xffff, 0x8000, 0};
    const long fds_before = ctx.watch_pid != 0 ? count_fds(ctx.watch_pid) : -1;
    const long maps_before = ctx.watch_pid != 0 ? count_shared_maps(ctx.watch_pid) : -1;
    send_request(sock, Request::get_inflight_fd, false, &inflight, sizeof inflight);
    say("sent GET_INFLIGHT_FD for a 1 TiB region (INFLIGHT_SHMFD never negotiated)");
    if (fds_before >= 0) {
        std::this_thread::sleep_for(milliseconds(200));
        const long fds_after = count_fds(ctx.watch_pid);
        const long maps_after = count_shared_maps(ctx.watch_pid);
        say("back end fds %ld -> %ld, shared mappings %ld -> %ld", fds_before, fds_after,
            maps_before, maps_after);
        if (fds_after > fds_before || maps_after > maps_before) {
            throw BackendMisbehaved("back end created something for an unnegotiated request");
        }
    }
    require_drop(sock, "GET_INFLIGHT_FD without INFLIGHT_SHMFD", kDropTimeout);
}

}  // namespace vnet::hostile
