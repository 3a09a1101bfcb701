// vhost-user wire format (QEMU docs/interop/vhost-user.rst, "Message
// Specification"). Shared by the back end (vhost_user/) and the front end
// (frontend/): the same structs are encoded on one side and validated on the
// other. Native byte order, as the spec says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "virtio/bit_set.hpp"

namespace vnet::vhost_user {

enum class Request : uint32_t {
    none = 0,
    get_features = 1,
    set_features = 2,
    set_owner = 3,
    reset_owner = 4,
    set_mem_table = 5,
    set_log_base = 6,
    set_log_fd = 7,
    set_vring_num = 8,
    set_vring_addr = 9,
    set_vring_base = 10,
    get_vring_base = 11,
    set_vring_kick = 12,
    set_vring_call = 13,
    set_vring_err = 14,
    get_protocol_features = 15,
    set_protocol_features = 16,
    get_queue_num = 17,
    set_vring_enable = 18,
    send_rarp = 19,
    net_set_mtu = 20,
    set_backend_req_fd = 21,
    iotlb_msg = 22,
    set_vring_endian = 23,
    get_config = 24,
    set_config = 25,
    create_crypto_session = 26,
    close_crypto_session = 27,
    postcopy_advise = 28,
    postcopy_listen = 29,
    postcopy_end = 30,
    get_inflight_fd = 31,
    set_inflight_fd = 32,
    gpu_set_socket = 33,
    reset_device = 34,
    vring_kick = 35,
    get_max_mem_slots = 36,
    add_mem_reg = 37,
    rem_mem_reg = 38,
    set_status = 39,
    get_status = 40,
    get_shared_object = 41,
    set_device_state_fd = 42,
    check_device_state = 43,
};
inline constexpr uint32_t kRequestCount = 44;  // ids 0..43
const char* to_string(Request r);

enum class ProtocolFeature : uint8_t {
    mq = 0,
    log_shmfd = 1,
    rarp = 2,
    reply_ack = 3,
    net_mtu = 4,
    backend_req = 5,
    cross_endian = 6,
    crypto_session = 7,
    pagefault = 8,
    config = 9,
    backend_send_fd = 10,
    host_notifier = 11,
    inflight_shmfd = 12,
    reset_device = 13,
    inband_notifications = 14,
    configure_mem_slots = 15,
    status = 16,
    xen_mmap = 17,
    shared_object = 18,
    device_state = 19,
};

using ProtocolFeatureSet = virtio::BitSet<ProtocolFeature>;

struct MessageHeader {
    static constexpr uint32_t kVersionMask = 0x3;
    static constexpr uint32_t kVersion = 0x1;
    static constexpr uint32_t kFlagReply = 0x4;
    static constexpr uint32_t kFlagNeedReply = 0x8;

    uint32_t request;
    uint32_t flags;
    uint32_t size;  // payload bytes that follow
};
static_assert(sizeof(MessageHeader) == 12);

// "At most 8 file descriptors" per message (vhost-user.rst, Communication).
inline constexpr size_t kMaxFdsPerMessage = 8;
// The largest payload we accept; bigger is a protocol error, never an
// allocation (hostile-input rule 6). The largest real payload is the
// memory table (264 bytes); rust-vmm uses the same 4 KiB cap.
inline constexpr uint32_t kMaxPayloadSize = 4096;

// Payload of SET_VRING_NUM, SET_VRING_BASE, GET_VRING_BASE, SET_VRING_ENABLE.
struct VringState {
    uint32_t index;
    uint32_t num;
};
static_assert(sizeof(VringState) == 8);

struct VringAddr {
    static constexpr uint32_t kFlagLog = 0x1;
    uint32_t index;
    uint32_t flags;
    uint64_t desc_user_addr;
    uint64_t used_user_addr;
    uint64_t avail_user_addr;
    uint64_t log_guest_addr;
};
static_assert(sizeof(VringAddr) == 40);

// The u64 payload of SET_VRING_KICK / CALL / ERR.
inline constexpr uint64_t kVringIndexMask = 0xff;
inline constexpr uint64_t kVringNoFdFlag = 0x100;

struct MemoryRegionDesc {
    uint64_t guest_phys_addr;
    uint64_t memory_size;
    uint64_t userspace_addr;
    uint64_t mmap_offset;
};
static_assert(sizeof(MemoryRegionDesc) == 32);

// SET_MEM_TABLE: at most 8 regions, one fd each, in order.
inline constexpr uint32_t kMaxMemTableRegions = 8;
struct MemoryTable {
    uint32_t nregions;
    uint32_t padding;
    MemoryRegionDesc regions[kMaxMemTableRegions];
};
static_assert(sizeof(MemoryTable) == 8 + 8 * 32);

// ADD_MEM_REG / REM_MEM_REG.
struct SingleMemoryRegion {
    uint64_t padding;
    MemoryRegionDesc region;
};
static_assert(sizeof(SingleMemoryRegion) == 40);

struct LogBase {
    uint64_t mmap_size;
    uint64_t mmap_offset;
};
static_assert(sizeof(LogBase) == 16);

// GET_INFLIGHT_FD / SET_INFLIGHT_FD ("inflight description"): QEMU's
// VhostUserInflight, padded to 24 bytes as QEMU and DPDK send it.
struct InflightDescription {
    uint64_t mmap_size;
    uint64_t mmap_offset;
    uint16_t num_queues;
    uint16_t queue_size;
    uint32_t padding;
};
static_assert(sizeof(InflightDescription) == 24);

// GET_CONFIG / SET_CONFIG: this header, then `size` bytes of the device's
// configuration space from `offset` (vhost-user.rst "Virtio device config
// space"), at most QEMU's VHOST_USER_MAX_CONFIG_SIZE.
struct DeviceConfigHeader {
    uint32_t offset;
    uint32_t size;
    uint32_t flags;
};
static_assert(sizeof(DeviceConfigHeader) == 12);
inline constexpr uint32_t kMaxConfigSize = 256;

// virtio 1.2 §5.1.4 struct virtio_net_config (little-endian): the fields a
// back end fills; mtu means something with VIRTIO_NET_F_MTU,
// max_virtqueue_pairs with VIRTIO_NET_F_MQ.
inline constexpr uint32_t kNetConfigStatusOffset = 6;
inline constexpr uint32_t kNetConfigMaxQueuePairsOffset = 8;
inline constexpr uint32_t kNetConfigMtuOffset = 10;
inline constexpr uint16_t kNetStatusLinkUp = 1;

// vhost-user.rst: the device status is a u64 whose value must fit in a u8.
inline constexpr uint64_t kMaxDeviceStatus = 0xff;

// GET_MAX_MEM_SLOTS: what we advertise (QEMU caps at 512; libvhost-user 509).
inline constexpr uint64_t kAdvertisedMemSlots = 509;

}  // namespace vnet::vhost_user
