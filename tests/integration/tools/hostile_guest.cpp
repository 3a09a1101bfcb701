#include "hostile_guest.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "hostile_wire.hpp"
#include "io/eventfd.hpp"

namespace vnet::hostile {
namespace {

using Clock = std::chrono::steady_clock;
using virtio::Feature;

[[noreturn]] void throw_errno(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

size_t round_up(size_t value, size_t align) {
    return (value + align - 1) / align * align;
}

size_t page_size() {
    return static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

constexpr size_t kScratchBytes = 64 * 1024;
constexpr std::chrono::milliseconds kConnectTimeout{20000};

size_t guest_bytes(uint16_t queue_size) {
    return 2 * (frontend::ring_storage_bytes(queue_size) + frontend::kRingAreaAlign) + 4096 +
           kScratchBytes + 4096;
}

// 02:00:00:00:00:01 -> 02:00:00:00:00:02, ethertype 0x88b5 (IEEE local
// experimental: the stack behind the tap ignores it), zero payload.
void write_frame(std::byte* p) {
    std::memset(p, 0, HostileGuest::kNetHeaderBytes + HostileGuest::kFrameBytes);
    uint8_t* eth = reinterpret_cast<uint8_t*>(p) + HostileGuest::kNetHeaderBytes;
    const uint8_t header[14] = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5};
    std::memcpy(eth, header, sizeof header);
}

}  // namespace

GuestMemfd::GuestMemfd(size_t size, Sealing sealing, size_t lead) : lead_(lead) {
    const size_t page = page_size();
    size_ = round_up(size == 0 ? page : size, page);
    const unsigned flags = MFD_CLOEXEC | (sealing != Sealing::none ? MFD_ALLOW_SEALING : 0u);
    fd_.reset(::memfd_create("vnet-hostile-guest", flags));
    if (!fd_) {
        throw_errno("memfd_create");
    }
    const size_t file_len = lead_ + size_;
    if (::ftruncate(fd_.get(), static_cast<off_t>(file_len)) != 0) {
        throw_errno("ftruncate(memfd)");
    }
    map_len_ = round_up(file_len, page);
    void* p = ::mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    if (p == MAP_FAILED) {
        throw_errno("mmap(memfd)");
    }
    map_ = static_cast<std::byte*>(p);
    std::memset(map_, kLeadPattern, lead_);
    base_ = map_ + lead_;
    int seals = 0;
    if (sealing == Sealing::fixed_size) {
        seals = F_SEAL_SHRINK | F_SEAL_GROW;
    } else if (sealing == Sealing::grow_only) {
        seals = F_SEAL_GROW;
    }
    if (seals != 0 && ::fcntl(fd_.get(), F_ADD_SEALS, seals) != 0) {
        throw_errno("fcntl(F_ADD_SEALS)");
    }
}

GuestMemfd::~GuestMemfd() {
    if (map_ != nullptr) {
        ::munmap(map_, map_len_);
    }
}

std::span<std::byte> GuestMemfd::allocate(size_t size, size_t align) {
    const size_t start = round_up(next_, align);
    if (start > size_ || size > size_ - start) {
        throw std::length_error("GuestMemfd: out of guest memory");
    }
    next_ = start + size;
    std::memset(base_ + start, 0, size);
    return {base_ + start, size};
}

vhost_user::MemoryRegionDesc GuestMemfd::region() const {
    const uint64_t addr = reinterpret_cast<uintptr_t>(base_);
    return {.guest_phys_addr = addr,
            .memory_size = size_,
            .userspace_addr = addr,
            .mmap_offset = lead_};
}

bool GuestMemfd::lead_intact() const {
    for (size_t i = 0; i < lead_; ++i) {
        if (static_cast<uint8_t>(map_[i]) != kLeadPattern) {
            return false;
        }
    }
    return true;
}

void GuestMemfd::truncate_file(size_t file_bytes) {
    if (::ftruncate(fd_.get(), static_cast<off_t>(file_bytes)) != 0) {
        throw_errno("ftruncate(shrink)");
    }
}

HostileGuest::HostileGuest(const std::string& socket_path, const GuestConfig& config)
    : config_(config),
      session_(connect_admitted(socket_path, kConnectTimeout), socket_path),
      memory_(guest_bytes(config.queue_size), config.sealing, config.lead) {
    for (uint32_t q : {kRx, kTx}) {
        auto storage = memory_.allocate(frontend::ring_storage_bytes(config_.queue_size),
                                        frontend::kRingAreaAlign);
        layouts_[q] = frontend::carve_ring_layout(storage, config_.queue_size);
        rings_[q].emplace(layouts_[q], false);
        kick_fds_[q] = io::make_eventfd();
        call_fds_[q] = io::make_eventfd();
    }
    frame_ = memory_.allocate(round_up(kNetHeaderBytes + kFrameBytes, 64), 64).data();
    write_frame(frame_);
    scratch_ = memory_.allocate(kScratchBytes, 4096);
}

HostileGuest::~HostileGuest() = default;

void HostileGuest::negotiate() {
    session_.set_owner();
    const virtio::FeatureSet offered = session_.get_features();
    const bool protocol_features = offered.has(Feature::vhost_user_protocol_features);
    if (protocol_features) {
        const auto offered_protocol = session_.get_protocol_features();
        session_.set_protocol_features(
            vhost_user::ProtocolFeatureSet(offered_protocol.bits() & config_.protocol.bits()));
    }
    virtio::FeatureSet want{Feature::version_1};
    if (config_.indirect) {
        want = want.with(Feature::ring_indirect_desc);
    }
    if (config_.packed) {
        want = want.with(Feature::ring_packed);
    }
    if (!want.is_subset_of(offered)) {
        throw std::runtime_error("back end does not offer the features this attack needs");
    }
    negotiated_ = protocol_features ? want.with(Feature::vhost_user_protocol_features) : want;
    session_.set_features(negotiated_);
}

void HostileGuest::set_mem_table() {
    const vhost_user::MemoryRegionDesc region = memory_.region();
    const int fd = memory_.fd();
    session_.set_mem_table(std::span(&region, 1), std::span(&fd, 1));
}

void HostileGuest::start_ring(uint32_t q) {
    session_.set_vring_call(q, call_fds_[q].get());
    session_.set_vring_num(q, config_.queue_size);
    session_.set_vring_base(q, rings_[q]->avail_shadow_idx());
    session_.set_vring_addr(q, layouts_[q]);
    session_.set_vring_kick(q, kick_fds_[q].get());
}

void HostileGuest::enable_rings() {
    if (negotiated_.has(Feature::vhost_user_protocol_features)) {
        for (uint32_t q : {kRx, kTx}) {
            session_.set_vring_enable(q, true);
        }
    }
}

void HostileGuest::bring_up() {
    negotiate();
    set_mem_table();
    for (uint32_t q : {kRx, kTx}) {
        start_ring(q);
    }
    enable_rings();
}

void HostileGuest::kick(uint32_t q) const {
    io::signal_eventfd(kick_fds_[q].get());
}

uint16_t HostileGuest::used_idx(uint32_t q) const {
    return std::atomic_ref<uint16_t>(layouts_[q].used->idx).load(std::memory_order_acquire);
}

uint64_t HostileGuest::reclaim_tx() {
    if (memory_gone_) {
        throw std::logic_error("guest memory was truncated: the rings are gone");
    }
    uint64_t total = 0;
    for (;;) {
        frontend::Completion done[256];
        frontend::UsedRingError error = frontend::UsedRingError::ok;
        const uint16_t n = rings_[kTx]->reclaim(done, &error);
        if (error != frontend::UsedRingError::ok) {
            throw BackendMisbehaved(std::string("TX used ring: ") + frontend::to_string(error));
        }
        total += n;
        if (n == 0) {
            return total;
        }
    }
}

uint64_t HostileGuest::send_frames(uint64_t count, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    frontend::DriverSplitRing& tx = *rings_[kTx];
    uint64_t queued = 0;
    uint64_t done = 0;
    for (;;) {
        done += reclaim_tx();
        bool added = false;
        while (queued < count && tx.free_descriptors() > 0) {
            tx.add_buffer(frame_gpa(), frame_len(), frontend::BufferAccess::device_reads, 0);
            ++queued;
            added = true;
        }
        if (added) {
            tx.publish();
            kick(kTx);
        }
        if (done >= count || Clock::now() >= deadline) {
            return done;
        }
        if (io::wait_eventfd(call_fds_[kTx].get(), 5)) {
            io::drain_eventfd(call_fds_[kTx].get());
        }
    }
}

uint64_t HostileGuest::pump_until(Clock::time_point until) {
    frontend::DriverSplitRing& tx = *rings_[kTx];
    uint64_t done = 0;
    for (;;) {
        done += reclaim_tx();
        while (tx.free_descriptors() > 0) {
            tx.add_buffer(frame_gpa(), frame_len(), frontend::BufferAccess::device_reads, 0);
        }
        tx.publish();
        kick(kTx);
        if (Clock::now() >= until) {
            return done;
        }
        if (io::wait_eventfd(call_fds_[kTx].get(), 1)) {
            io::drain_eventfd(call_fds_[kTx].get());
        }
    }
}

uint64_t HostileGuest::queue_frames(uint64_t count) {
    frontend::DriverSplitRing& tx = *rings_[kTx];
    uint64_t queued = 0;
    while (queued < count && tx.free_descriptors() > 0) {
        tx.add_buffer(frame_gpa(), frame_len(), frontend::BufferAccess::device_reads, 0);
        ++queued;
    }
    tx.publish();
    kick(kTx);
    return queued;
}

uint64_t HostileGuest::wait_completions(uint64_t count, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    uint64_t done = 0;
    for (;;) {
        done += reclaim_tx();
        if (done >= count || Clock::now() >= deadline) {
            return done;
        }
        if (io::wait_eventfd(call_fds_[kTx].get(), 5)) {
            io::drain_eventfd(call_fds_[kTx].get());
        }
    }
}

// The raw steps go through the driver side's one raw writer, over the same
// layout DriverSplitRing uses: the attacks need what no driver writes.
virtio::VirtqDesc& HostileGuest::desc(uint32_t q, uint16_t index) {
    return frontend::RawSplitRingWriter(layouts_[q]).desc(index);
}

uint16_t HostileGuest::avail_idx(uint32_t q) const {
    return frontend::RawSplitRingWriter(layouts_[q]).avail_idx();
}

void HostileGuest::set_avail_idx(uint32_t q, uint16_t idx) {
    frontend::RawSplitRingWriter(layouts_[q]).set_avail_idx(idx);
}

void HostileGuest::publish_head(uint32_t q, uint16_t head) {
    frontend::RawSplitRingWriter(layouts_[q]).make_available(head);
}

}  // namespace vnet::hostile
