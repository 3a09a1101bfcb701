// What popping one chain from a device ring can end in. One value per rule a
// guest can break, shared by every ring model, so the caller logs exactly
// what the guest did and handles both models with one switch.
#pragma once

#include <cstdint>

namespace vnet::virtio {

enum class PopStatus : uint8_t {
    ok,
    empty,              // nothing available: not an error
    too_many_segments,  // more iovecs than the caller gave; the chain stays for a retry
    // Everything below is the guest breaking a rule: the ring is broken and
    // must not be used again until the front end resets it.
    avail_index_jump,          // split: avail->idx moved by more than the queue size
    head_out_of_range,         // split: an avail ring entry >= queue size
    next_out_of_range,         // split: a `next` index outside its table
    chain_loop,                // split: more descriptors than the table holds
    chain_too_long,            // packed: a chain of more slots than the ring has
    id_out_of_range,           // packed: buffer id >= queue size
    descriptor_not_available,  // packed: a chained descriptor's AVAIL/USED bits are stale
    too_many_in_flight,        // packed: more slots available than the driver got back
    id_in_flight,              // packed, inflight tracking: a buffer id already in flight
    resumed_chain_invalid,     // packed: a resubmitted chain's NEXT flags disagree with its length
    indirect_not_negotiated,   // INDIRECT without VIRTIO_F_INDIRECT_DESC
    indirect_nested,           // INDIRECT inside an indirect table
    indirect_with_next,        // INDIRECT together with NEXT
    indirect_in_chain,         // packed: an indirect descriptor after a NEXT one
    indirect_bad_length,       // table length 0 or not a multiple of 16
    indirect_too_large,        // table has more entries than the queue size
    indirect_table_unmapped,   // table not wholly inside one guest memory region
    readable_after_writable,   // a device-readable buffer after a writable one
    total_length_overflow,     // chain length >= 2^32
    buffer_unmapped,           // a buffer not wholly inside guest memory
};
const char* to_string(PopStatus s);

// True for the values that mean the guest broke the ring.
constexpr bool breaks_ring(PopStatus s) {
    return s > PopStatus::too_many_segments;
}

// SET_VRING_BASE refused; the ring is left exactly as it was (hostile-input rule 1).
enum class BaseError : uint8_t {
    ok,
    avail_index_out_of_range,  // packed: bits 0-14 >= queue size
    used_index_out_of_range,   // packed: bits 16-30 >= queue size
    in_flight_exceeds_ring,    // packed: used position more than a ring behind avail
    wider_than_format,         // split: more than the 16 bits of an avail index
    no_queue_size,             // packed: no queue size to check the base against yet
};
const char* to_string(BaseError e);

}  // namespace vnet::virtio
