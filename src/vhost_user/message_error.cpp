#include "vhost_user/message_error.hpp"

namespace vnet::vhost_user {

const char* to_string(MessageError e) {
    switch (e) {
        case MessageError::ok:
            return "ok";
        case MessageError::unknown_request:
            return "unknown request id";
        case MessageError::unsupported_request:
            return "request not supported";
        case MessageError::protocol_feature_not_negotiated:
            return "request needs a protocol feature that was not negotiated";
        case MessageError::reply_flag_on_request:
            return "request carries the REPLY flag";
        case MessageError::payload_size_mismatch:
            return "payload size does not match the request";
        case MessageError::unexpected_fds:
            return "fds attached to a request that takes none";
        case MessageError::wrong_fd_count:
            return "wrong number of fds for the request";
        case MessageError::features_not_offered:
            return "acked features that were not offered";
        case MessageError::features_changed_while_running:
            return "features changed while a ring is running";
        case MessageError::protocol_features_not_offered:
            return "acked protocol features that were not offered";
        case MessageError::vring_index_out_of_range:
            return "vring index out of range";
        case MessageError::vring_reserved_bits_set:
            return "reserved bits set in vring fd payload";
        case MessageError::vring_num_invalid:
            return "vring size is zero, above 32768 or not a power of 2";
        case MessageError::vring_base_out_of_range:
            return "split vring base above 0xffff";
        case MessageError::vring_base_avail_out_of_range:
            return "packed vring base: avail index >= queue size";
        case MessageError::vring_base_used_out_of_range:
            return "packed vring base: used index >= queue size";
        case MessageError::vring_base_without_num:
            return "packed vring base before SET_VRING_NUM";
        case MessageError::vring_base_in_flight_exceeds_ring:
            return "packed vring base: used index more than a ring behind avail";
        case MessageError::vring_addr_flags_invalid:
            return "unsupported vring address flags";
        case MessageError::vring_log_address_overflow:
            return "vring log address + used ring size overflows";
        case MessageError::vring_addr_misaligned:
            return "vring area misaligned";
        case MessageError::vring_enable_value_invalid:
            return "vring enable value is not 0 or 1";
        case MessageError::ring_running:
            return "ring is running";
        case MessageError::ring_not_in_guest_memory:
            return "ring area not wholly inside one guest memory region";
        case MessageError::not_an_eventfd:
            return "fd is not an eventfd";
        case MessageError::fd_setup_failed:
            return "could not make the fd non-blocking";
        case MessageError::mem_region_count_invalid:
            return "memory region count not in 1..8";
        case MessageError::mem_region_zero_size:
            return "memory region size is zero";
        case MessageError::mem_region_address_overflow:
            return "memory region end overflows 64-bit addresses";
        case MessageError::mem_region_offset_overflow:
            return "mmap_offset + size overflows";
        case MessageError::mem_region_not_a_file:
            return "memory region fd is not a regular file";
        case MessageError::mem_region_beyond_file:
            return "memory region extends beyond the end of its file";
        case MessageError::mem_region_not_sealed_against_shrink:
            return "sealed memory region fd lacks F_SEAL_SHRINK";
        case MessageError::mem_region_map_failed:
            return "mmap of memory region failed";
        case MessageError::mem_regions_overlap:
            return "memory regions overlap";
        case MessageError::mem_too_many_regions:
            return "too many memory regions";
        case MessageError::mem_region_not_found:
            return "no such memory region";
        case MessageError::inflight_num_queues_invalid:
            return "inflight num_queues is 0 or more than the device's queues";
        case MessageError::inflight_queue_size_invalid:
            return "inflight queue_size is not a valid queue size for the ring format";
        case MessageError::inflight_region_too_small:
            return "inflight mmap_size does not cover num_queues queue regions";
        case MessageError::inflight_not_sealed_against_shrink:
            return "inflight fd is not sealed against shrinking";
        case MessageError::inflight_region_misaligned:
            return "inflight mmap_offset is not 64-byte aligned";
        case MessageError::inflight_alloc_failed:
            return "inflight buffer could not be allocated";
        case MessageError::inflight_ring_format_mismatch:
            return "ring format differs from the inflight buffer's layout";
        case MessageError::inflight_region_invalid:
            return "inflight region does not recover for this ring";
        case MessageError::log_smaller_than_memory:
            return "dirty log does not cover all guest memory";
        case MessageError::log_not_sealed_against_shrink:
            return "dirty log fd is not sealed against shrinking (F_SEAL_SHRINK)";
        case MessageError::status_out_of_range:
            return "device status above 0xff";
        case MessageError::mtu_out_of_range:
            return "MTU outside 68..65535";
        case MessageError::config_range_invalid:
            return "config space range outside 0..256";
        case MessageError::device_broken:
            return "device is broken";
    }
    return "unknown error";
}

}  // namespace vnet::vhost_user
