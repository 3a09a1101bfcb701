// Why a vhost-user message was refused (or a device broken). One value per
// class of bad input, so tests and logs say exactly what the front end did.
#pragma once

#include <cstdint>

namespace vnet::vhost_user {

enum class MessageError : uint8_t {
    ok,
    // Framing and table rules (checked by the dispatcher for every request).
    unknown_request,
    unsupported_request,
    protocol_feature_not_negotiated,
    reply_flag_on_request,
    payload_size_mismatch,
    unexpected_fds,
    wrong_fd_count,
    // Features.
    features_not_offered,
    features_changed_while_running,
    protocol_features_not_offered,
    // Vrings.
    vring_index_out_of_range,
    vring_reserved_bits_set,
    vring_num_invalid,
    vring_base_out_of_range,
    vring_base_avail_out_of_range,      // packed: bits 0-14 >= queue size
    vring_base_used_out_of_range,       // packed: bits 16-30 >= queue size
    vring_base_without_num,             // packed: no SET_VRING_NUM to check the base against
    vring_base_in_flight_exceeds_ring,  // packed: used more than a ring behind avail
    vring_addr_flags_invalid,
    vring_log_address_overflow,
    vring_addr_misaligned,
    vring_enable_value_invalid,
    ring_running,
    ring_not_in_guest_memory,
    not_an_eventfd,
    fd_setup_failed,
    // Memory table.
    mem_region_count_invalid,
    mem_region_zero_size,
    mem_region_address_overflow,
    mem_region_offset_overflow,
    mem_region_not_a_file,
    mem_region_beyond_file,
    mem_region_not_sealed_against_shrink,
    mem_region_map_failed,
    mem_regions_overlap,
    mem_too_many_regions,
    mem_region_not_found,
    // Dirty log.
    log_smaller_than_memory,
    log_not_sealed_against_shrink,  // no F_SEAL_SHRINK, or an fd that cannot be sealed
    // Inflight buffer (INFLIGHT_SHMFD).
    inflight_num_queues_invalid,  // 0, or more queues than the device has
    inflight_queue_size_invalid,  // split: not a power of two in 1..32768; packed: not in 1..32768
    inflight_region_too_small,    // mmap_size below num_queues regions
    inflight_not_sealed_against_shrink,
    inflight_region_misaligned,     // mmap_offset leaves the regions unaligned
    inflight_alloc_failed,          // memfd_create/ftruncate/mmap failed (GET)
    inflight_ring_format_mismatch,  // SET_FEATURES changes the ring format under a buffer
    inflight_region_invalid,        // a ring started over a region that does not recover
    // Device configuration.
    status_out_of_range,
    mtu_out_of_range,
    config_range_invalid,
    // State.
    device_broken,
};

const char* to_string(MessageError e);

}  // namespace vnet::vhost_user
