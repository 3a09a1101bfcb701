// vnet-hostile: a vhost-user front end that attacks the back end behind a
// socket, one named attack per run, and says what it did and what it saw.
//
//   vnet-hostile --socket-path P --attack NAME [--variant V] [--watch-pid PID]
//                [--repeat N] [--stall-seconds S]
//   vnet-hostile --list
//
// Exit status: 0 the back end held (refused, dropped us, or carried on as it
// must); 1 it misbehaved in a way the front end can see (accepted what it must
// refuse, answered a broken device's request, leaked fds under --watch-pid);
// 2 the attack could not be carried out (no back end, bad arguments).
//
// Whether the daemon survived, kept its other ports forwarding, logged the
// rule and returned to its fd baseline is checked from outside by
// tests/integration/test_hostile_frontend.sh.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "frontend/frontend_session.hpp"
#include "hostile_attacks.hpp"
#include "hostile_wire.hpp"

namespace vnet::hostile {
namespace {

constexpr Attack kAttacks[] = {
    {"bad-mem-table", "rules 3, 4: regions vs file size, overflow, overlap, count, fds, seals",
     attack_bad_mem_table},
    {"ring-outside-memory", "CVE-2018-1059 class: each ring area inside one region",
     attack_ring_outside_memory},
    {"looping-chain", "virtio 1.2 2.7.5.2: TX chains that loop or leave the table",
     attack_looping_chain},
    {"avail-index-jump", "rule 7: avail->idx moved by more than the ring size",
     attack_avail_index_jump},
    {"shrink-memfd", "rule 4: guest memory truncated while the TX ring is read (SIGBUS)",
     attack_shrink_memfd},
    {"call-not-eventfd", "rule 5: CALL/KICK/ERR fds that are not eventfds",
     attack_call_not_eventfd},
    {"half-message", "rule 2: a partial header and a stall; the control plane goes on",
     attack_half_message},
    {"connection-flood", "rule 2: 200 connections at once", attack_connection_flood},
    {"rejected-fds-stream", "rule 3, CVE-2019-14818/2022-0669: 10000 messages with fds",
     attack_rejected_fds_stream},
    {"too-many-fds", "rule 3: 64 fds on one message (MSG_CTRUNC)", attack_too_many_fds},
    {"oversized-payload", "rule 6: header size 0x10000, wrong sizes, wrong version",
     attack_oversized_payload},
    {"bad-vring-index", "CVE-2020-10723: vring index checked as a u32", attack_bad_vring_index},
    {"unread-replies", "rules 2, 5: bounded reply queue; replies to a vanished peer (SIGPIPE)",
     attack_unread_replies},
    {"unnegotiated-request", "rule 6: requests whose protocol feature was not negotiated",
     attack_unnegotiated_request},
    {"repeated-mem-table", "rule 3, CVE-2019-14818: 500 accepted tables, no fd/mapping growth",
     attack_repeated_mem_table},
    {"mmap-offset-once", "rule 4: a non-page-aligned mmap_offset, applied exactly once",
     attack_mmap_offset_once},
    {"ring-state-rules", "rules 1, 7: refused messages change nothing; no resize while running",
     attack_ring_state_rules},
    {"bad-indirect", "rule 7: indirect tables: feature, length, nesting, NEXT, size",
     attack_bad_indirect},
    {"rx-readonly-buffer", "rule 7: never write into a descriptor without WRITE",
     attack_rx_readonly_buffer},
    {"packed-ring", "rule 7 on packed rings: stale wrap bits, buffer id >= size, endless chain",
     attack_packed_ring},
};

}  // namespace

std::span<const Attack> all_attacks() {
    return kAttacks;
}

void run_variants(const AttackContext& ctx, std::span<const Variant> variants) {
    bool ran = false;
    for (const Variant& v : variants) {
        if (!ctx.variant.empty() && ctx.variant != v.name) {
            continue;
        }
        say("-- variant %s", v.name);
        v.run(ctx);
        ran = true;
    }
    if (!ran) {
        std::string names;
        for (const Variant& v : variants) {
            names += names.empty() ? "" : ", ";
            names += v.name;
        }
        throw std::invalid_argument("no variant '" + ctx.variant + "' (there are: " + names + ")");
    }
}

}  // namespace vnet::hostile

int main(int argc, char** argv) {
    using namespace vnet::hostile;
    CLI::App app{"vnet-hostile: attacks a vhost-user back end, one named attack per run"};
    AttackContext ctx;
    std::string attack;
    bool list = false;
    unsigned stall_s = 10;
    app.add_option("--socket-path", ctx.socket_path, "the back end's vhost-user socket");
    app.add_option("--attack", attack, "attack name (see --list)");
    app.add_option("--variant", ctx.variant, "run one variant of the attack only");
    app.add_option("--watch-pid", ctx.watch_pid,
                   "the back end's pid: check its fds and mappings while connected");
    app.add_option("--repeat", ctx.repeat, "rounds (shrink-memfd)")->check(CLI::Range(1u, 1000u));
    app.add_option("--stall-seconds", stall_s, "half-message: seconds to stall")
        ->check(CLI::Range(1u, 3600u));
    app.add_flag("--list", list, "list the attacks and exit");
    CLI11_PARSE(app, argc, argv);

    if (list) {
        for (const Attack& a : all_attacks()) {
            std::printf("%-22s %s\n", a.name, a.rule);
        }
        return 0;
    }
    if (ctx.socket_path.empty() || attack.empty()) {
        std::fprintf(stderr, "vnet-hostile: --socket-path and --attack are required\n");
        return 2;
    }
    ctx.stall = std::chrono::seconds(stall_s);
    const Attack* chosen = nullptr;
    for (const Attack& a : all_attacks()) {
        if (attack == a.name) {
            chosen = &a;
        }
    }
    if (chosen == nullptr) {
        std::fprintf(stderr, "vnet-hostile: no attack '%s' (--list shows them)\n", attack.c_str());
        return 2;
    }
    // Our own writes to a back end that dropped us must fail, not kill us.
    ::signal(SIGPIPE, SIG_IGN);
    say("attack %s on %s (%s)", chosen->name, ctx.socket_path.c_str(), chosen->rule);
    try {
        chosen->run(ctx);
    } catch (const BackendMisbehaved& e) {
        say("result: BACK END MISBEHAVED: %s", e.what());
        return 1;
    } catch (const vnet::frontend::FrontendError& e) {
        // A well-behaved step was refused or went unanswered.
        say("result: BACK END MISBEHAVED: a valid step failed: %s", e.what());
        return 1;
    } catch (const std::exception& e) {
        say("result: could not carry out the attack: %s", e.what());
        return 2;
    }
    say("result: back end held (attack %s)", chosen->name);
    return 0;
}
