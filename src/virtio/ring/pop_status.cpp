#include "virtio/ring/pop_status.hpp"

namespace vnet::virtio {

const char* to_string(PopStatus s) {
    switch (s) {
        case PopStatus::ok:
            return "ok";
        case PopStatus::empty:
            return "nothing available";
        case PopStatus::too_many_segments:
            return "chain needs more iovecs than allowed";
        case PopStatus::avail_index_jump:
            return "avail index moved by more than the queue size";
        case PopStatus::head_out_of_range:
            return "avail ring entry >= queue size";
        case PopStatus::next_out_of_range:
            return "descriptor next index out of range";
        case PopStatus::chain_loop:
            return "descriptor chain loops";
        case PopStatus::chain_too_long:
            return "descriptor chain longer than the queue size";
        case PopStatus::id_out_of_range:
            return "buffer id >= queue size";
        case PopStatus::descriptor_not_available:
            return "chained descriptor not marked available for this wrap";
        case PopStatus::too_many_in_flight:
            return "more descriptors in flight than the queue size";
        case PopStatus::id_in_flight:
            return "buffer id already in flight";
        case PopStatus::resumed_chain_invalid:
            return "resubmitted chain's NEXT flags disagree with its length";
        case PopStatus::indirect_not_negotiated:
            return "INDIRECT flag without INDIRECT_DESC";
        case PopStatus::indirect_nested:
            return "INDIRECT descriptor inside an indirect table";
        case PopStatus::indirect_with_next:
            return "INDIRECT and NEXT set together";
        case PopStatus::indirect_in_chain:
            return "INDIRECT descriptor inside a NEXT-linked chain";
        case PopStatus::indirect_bad_length:
            return "indirect table length is 0 or not a multiple of 16";
        case PopStatus::indirect_too_large:
            return "indirect table larger than the queue size";
        case PopStatus::indirect_table_unmapped:
            return "indirect table not inside one memory region";
        case PopStatus::readable_after_writable:
            return "device-readable descriptor after a writable one";
        case PopStatus::total_length_overflow:
            return "chain length >= 2^32 bytes";
        case PopStatus::buffer_unmapped:
            return "buffer not inside guest memory";
    }
    return "unknown pop status";
}

const char* to_string(BaseError e) {
    switch (e) {
        case BaseError::ok:
            return "ok";
        case BaseError::avail_index_out_of_range:
            return "vring base: avail index out of range";
        case BaseError::used_index_out_of_range:
            return "vring base: used index out of range";
        case BaseError::in_flight_exceeds_ring:
            return "vring base: used index more than a ring behind avail";
        case BaseError::wider_than_format:
            return "vring base: wider than the format's encoding";
        case BaseError::no_queue_size:
            return "vring base: no queue size to check it against";
    }
    return "unknown base error";
}

}  // namespace vnet::virtio
