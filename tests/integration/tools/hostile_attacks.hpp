// The attacks of vnet-hostile, one per hostile-input rule or known attack
// (reference/hostile-input-rules.md, reference/dpdk-vhost.md §3). Each runs
// against one vhost-user socket, prints what it did and what it saw, and
// throws BackendMisbehaved when the back end answered in a way no front end
// may ever see. Whether the daemon survived, leaked or logged is for the
// calling script to check from outside.
//
// Attacks with variants run all of them, each on a fresh connection unless
// the attack says otherwise; --variant picks one.
#pragma once

#include <chrono>
#include <span>
#include <string>

namespace vnet::hostile {

struct AttackContext {
    std::string socket_path;
    std::string variant;             // empty = every variant
    int watch_pid = 0;               // the back end's pid: fd/mapping counts are checked live
    unsigned repeat = 1;             // shrink-memfd: rounds
    std::chrono::seconds stall{10};  // half-message: how long to stall
};

struct Attack {
    const char* name;
    const char* rule;  // what it checks, for --list
    void (*run)(const AttackContext&);
};

std::span<const Attack> all_attacks();

// One variant of an attack: runs when ctx.variant is empty or names it.
struct Variant {
    const char* name;
    void (*run)(const AttackContext&);
};
void run_variants(const AttackContext& ctx, std::span<const Variant> variants);

// hostile_attacks_protocol.cpp: framing, fds, connections.
void attack_half_message(const AttackContext& ctx);
void attack_connection_flood(const AttackContext& ctx);
void attack_rejected_fds_stream(const AttackContext& ctx);
void attack_too_many_fds(const AttackContext& ctx);
void attack_oversized_payload(const AttackContext& ctx);
void attack_bad_vring_index(const AttackContext& ctx);
void attack_unread_replies(const AttackContext& ctx);
void attack_unnegotiated_request(const AttackContext& ctx);
void attack_call_not_eventfd(const AttackContext& ctx);

// hostile_attacks_memory.cpp: the memory table and guest memory.
void attack_bad_mem_table(const AttackContext& ctx);
void attack_ring_outside_memory(const AttackContext& ctx);
void attack_shrink_memfd(const AttackContext& ctx);
void attack_mmap_offset_once(const AttackContext& ctx);
void attack_repeated_mem_table(const AttackContext& ctx);

// hostile_attacks_ring.cpp: ring state and the datapath.
void attack_ring_state_rules(const AttackContext& ctx);
void attack_looping_chain(const AttackContext& ctx);
void attack_avail_index_jump(const AttackContext& ctx);
void attack_bad_indirect(const AttackContext& ctx);
void attack_rx_readonly_buffer(const AttackContext& ctx);
void attack_packed_ring(const AttackContext& ctx);

}  // namespace vnet::hostile
