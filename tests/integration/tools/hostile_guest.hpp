// HostileGuest: a front end whose every step an attack can take, skip or
// replace. It owns "guest RAM" as a memfd it may leave unsealed and shrink,
// or map at an offset inside the file; both rings of one queue pair (vring 0
// RX, vring 1 TX); their eventfds; and a TX pump that proves a ring moves.
//
// Addressing is virtio-user's: guest-physical == our virtual address, so the
// memory table, SET_VRING_ADDR and descriptors all carry plain pointers.
// Well-behaved steps go through frontend::FrontendSession (which checks every
// reply); hostile ones are raw writes on socket_fd() and into the rings.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/unique_fd.hpp"
#include "frontend/driver_ring_layout.hpp"
#include "frontend/driver_split_ring.hpp"
#include "frontend/frontend_session.hpp"
#include "frontend/raw_split_ring_writer.hpp"
#include "frontend/ring_layout_import.hpp"
#include "vhost_user/message.hpp"
#include "virtio/features.hpp"

namespace vnet::hostile {

enum class Sealing : uint8_t {
    fixed_size,  // F_SEAL_SHRINK | F_SEAL_GROW, as a careful VMM does
    none,        // created without MFD_ALLOW_SEALING: the file can be truncated
    grow_only,   // sealed, but not against shrinking (a back end must refuse it)
};

class GuestMemfd {
public:
    static constexpr uint8_t kLeadPattern = 0xa5;

    // `size` bytes of guest memory (rounded up to pages), preceded in the file
    // by `lead` bytes (the region's mmap_offset) that are filled with
    // kLeadPattern, so a back end that writes there is caught.
    GuestMemfd(size_t size, Sealing sealing, size_t lead = 0);
    ~GuestMemfd();
    GuestMemfd(const GuestMemfd&) = delete;
    GuestMemfd& operator=(const GuestMemfd&) = delete;

    std::byte* base() const { return base_; }
    size_t size() const { return size_; }
    size_t lead() const { return lead_; }
    int fd() const { return fd_.get(); }

    // Zeroed bytes aligned to `align` (a power of two); throws when exhausted.
    std::span<std::byte> allocate(size_t size, size_t align);

    // The SET_MEM_TABLE entry: gpa == uva == base(), mmap_offset == lead().
    vhost_user::MemoryRegionDesc region() const;

    bool lead_intact() const;

    // Shrinks the file to `file_bytes`. What lies past it is gone for every
    // mapping: touching it is SIGBUS, for us as for the back end.
    void truncate_file(size_t file_bytes);

private:
    UniqueFd fd_;
    std::byte* map_ = nullptr;  // the whole file, from offset 0
    size_t map_len_ = 0;
    std::byte* base_ = nullptr;  // map_ + lead_
    size_t lead_ = 0;
    size_t size_ = 0;
    size_t next_ = 0;
};

struct GuestConfig {
    uint16_t queue_size = 256;
    Sealing sealing = Sealing::fixed_size;
    size_t lead = 0;
    bool indirect = false;  // negotiate VIRTIO_F_INDIRECT_DESC
    bool packed = false;    // negotiate VIRTIO_F_RING_PACKED (the attack sets the rings up)
    // Wanted protocol features (the negotiated set is this & offered).
    vhost_user::ProtocolFeatureSet protocol{vhost_user::ProtocolFeature::reply_ack};
};

class HostileGuest {
public:
    static constexpr uint32_t kRx = 0;
    static constexpr uint32_t kTx = 1;
    static constexpr uint32_t kFrameBytes = 64;      // Ethernet frame, no FCS
    static constexpr uint32_t kNetHeaderBytes = 12;  // VERSION_1 virtio_net_hdr

    // Connects (waiting to be admitted) and prepares memory and rings;
    // sends nothing yet.
    HostileGuest(const std::string& socket_path, const GuestConfig& config);
    ~HostileGuest();
    HostileGuest(const HostileGuest&) = delete;
    HostileGuest& operator=(const HostileGuest&) = delete;

    frontend::FrontendSession& session() { return session_; }
    int socket_fd() const { return session_.socket_fd(); }
    GuestMemfd& memory() { return memory_; }
    const GuestMemfd& memory() const { return memory_; }
    virtio::FeatureSet negotiated() const { return negotiated_; }
    bool reply_ack() const { return session_.reply_ack(); }

    // Bring-up, in QEMU / virtio-user order. Each step waits for its ack when
    // REPLY_ACK was negotiated, so a refusal surfaces as FrontendError.
    void negotiate();      // SET_OWNER, GET_FEATURES, [GET/SET_PROTOCOL_FEATURES], SET_FEATURES
    void set_mem_table();  // one region: our memfd
    void start_ring(uint32_t q);  // CALL, NUM, BASE, ADDR, KICK
    void enable_rings();          // SET_VRING_ENABLE 1 on both (with PROTOCOL_FEATURES)
    void bring_up();              // all of the above

    const frontend::DriverRingLayout& layout(uint32_t q) const { return layouts_[q]; }
    frontend::DriverSplitRing& ring(uint32_t q) { return *rings_[q]; }
    int kick_fd(uint32_t q) const { return kick_fds_[q].get(); }
    int call_fd(uint32_t q) const { return call_fds_[q].get(); }
    void kick(uint32_t q) const;
    uint16_t used_idx(uint32_t q) const;

    // A readable TX buffer: virtio-net header + a 64-byte frame.
    uint64_t frame_gpa() const { return reinterpret_cast<uintptr_t>(frame_); }
    uint32_t frame_len() const { return kNetHeaderBytes + kFrameBytes; }
    // Spare guest memory for indirect tables and RX buffers (64 KiB).
    std::span<std::byte> scratch() const { return scratch_; }

    // Puts `count` frames on the TX ring and waits until the back end has
    // completed them all, or `timeout`. Returns how many it completed.
    uint64_t send_frames(uint64_t count, std::chrono::milliseconds timeout);
    // Keeps the TX ring full until `until`. Returns the frames completed.
    // Ends right after a publish and a kick, with the ring full: the back
    // end is busy reading it.
    uint64_t pump_until(std::chrono::steady_clock::time_point until);
    // Queues up to `count` frames (as descriptors allow), publishes and
    // kicks; returns how many. wait_completions then collects `count`
    // completions or gives up at `timeout`, returning how many came.
    uint64_t queue_frames(uint64_t count);
    uint64_t wait_completions(uint64_t count, std::chrono::milliseconds timeout);

    // Raw ring access for the attacks (frontend::RawSplitRingWriter: chains
    // and indices no driver would write; it bypasses DriverSplitRing, which
    // must not be used on that ring afterwards).
    virtio::VirtqDesc& desc(uint32_t q, uint16_t index);
    uint16_t avail_idx(uint32_t q) const;
    void set_avail_idx(uint32_t q, uint16_t idx);
    // Writes `head` at the next avail slot and publishes it (release).
    void publish_head(uint32_t q, uint16_t head);

    // The memory is gone (truncated): nothing may touch it from now on.
    void forget_memory() { memory_gone_ = true; }

private:
    uint64_t reclaim_tx();

    GuestConfig config_;
    frontend::FrontendSession session_;
    GuestMemfd memory_;
    virtio::FeatureSet negotiated_;
    frontend::DriverRingLayout layouts_[2];
    std::optional<frontend::DriverSplitRing> rings_[2];
    UniqueFd kick_fds_[2];
    UniqueFd call_fds_[2];
    std::byte* frame_ = nullptr;
    std::span<std::byte> scratch_;
    bool memory_gone_ = false;
};

}  // namespace vnet::hostile
