// libFuzzer target: a hostile vhost-user front end, rust-vmm style. The input
// is a SEQUENCE of front-end actions (not one message): messages with fds the
// harness created, raw bytes through the non-blocking reader, guest memory
// writes, file truncation behind the back end's mappings, reconnects. After
// each input every fd and every guest mapping must be gone again.
//
// Input format (little-endian, read front to back; missing bytes read as 0):
//   repeat { u8 op; fields }
//   op % 8 == 0 MESSAGE   u32 request, u32 flags, u16 size, u8 nfds (% 10),
//                         nfds x u8 pool index, then `size` payload bytes
//                         -> VhostUserDevice::handle_message
//   op % 8 == 1 WIRE      u16 len, u8 pool index of an fd to attach (0xff: none),
//                         len bytes -> written to a socketpair, read back with
//                         MessageReader, every complete message dispatched
//   op % 8 == 2 MEMFD     u32 size (% 4 MiB), u8 seals (0 none, 1 grow+shrink, 2 grow)
//   op % 8 == 3 GUEST     u8 pool index, u32 offset, u16 len, len bytes: pwrite
//   op % 8 == 4 TRUNCATE  u8 pool index, u32 size (% 4 MiB): ftruncate
//   op % 8 == 5 STOPIDX   u8 use, u16 value: what the dataplane reports on stop
//   op % 8 == 6 RECONNECT u8 queue pairs (% 4 + 1): a new device, as after a drop
//   op % 8 == 7 EVENTFD   a new eventfd in the pool
// Pool at start: 0 memfd 64 KiB, 1 eventfd, 2 eventfd, 3 pipe write end,
// 4 unix socket, 5 memfd 1 MiB sealed grow+shrink.
#include <dirent.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/guest_fault.hpp"
#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "vhost_user/connection.hpp"
#include "vhost_user/device.hpp"
#include "vhost_user/memory_region.hpp"

namespace {

using namespace vnet;
using namespace vnet::vhost_user;

constexpr size_t kMaxPool = 24;
constexpr int kMaxOps = 256;

void check(bool ok) {
    if (!ok) {
        __builtin_trap();
    }
}

// The reply sizes QEMU checks: a u64 for most, none for SET_LOG_BASE (QEMU
// reads an empty reply, as DPDK sends), the description for GET_INFLIGHT_FD
// (GET_CONFIG's depends on the request: see dispatch).
uint32_t expected_reply_size(uint32_t request) {
    switch (static_cast<Request>(request)) {
        case Request::set_log_base:
            return 0;
        case Request::get_inflight_fd:
            return sizeof(InflightDescription);
        default:
            return 8;
    }
}

class ByteReader {
public:
    ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    bool empty() const { return pos_ >= size_; }
    template <class T>
    T read() {
        T value{};
        const size_t n = std::min(sizeof(T), size_ - pos_);
        std::memcpy(&value, data_ + pos_, n);
        pos_ += n;
        return value;
    }
    // Up to `n` bytes, fewer at the end of input.
    size_t read_bytes(uint8_t* out, size_t n) {
        n = std::min(n, size_ - pos_);
        if (n == 0) {
            return 0;  // `out` may be null (an empty vector)
        }
        std::memcpy(out, data_ + pos_, n);
        pos_ += n;
        return n;
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

int open_fd_count() {
    int count = 0;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) {
        return -1;
    }
    while (dirent* e = ::readdir(dir)) {
        count += e->d_name[0] != '.';
    }
    ::closedir(dir);
    return count - 1;
}

bool inside_some_region(const virtio::GuestMemoryMap& map, const void* p, uint64_t len) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (const virtio::GuestRegion& r : map.regions()) {
        if (b >= r.host_addr && len <= r.size &&
            static_cast<uint64_t>(b - r.host_addr) <= r.size - len) {
            return true;
        }
    }
    return false;
}

// The dataplane stand-in: checks the device's promises about every snapshot
// and touches the ring memory it was given (guarded: files may shrink).
class CheckingObserver : public QueueObserver {
public:
    void on_queue_ready(VhostUserDevice& device, uint32_t q) override {
        check(device.queue_ready(q));
        QueueSnapshot s = device.queue_snapshot(q);
        if (const auto* packed = std::get_if<virtio::PackedRing>(&s.ring)) {
            check_packed(s, packed->layout());
            return;
        }
        const virtio::SplitRingLayout& l =
            std::get<virtio::SplitDeviceRing>(s.ring).split().layout();
        check(s.memory != nullptr && l.desc != nullptr && l.avail != nullptr && l.used != nullptr);
        const uint32_t n = l.size;
        check(n != 0 && (n & (n - 1)) == 0 && n <= virtio::kMaxQueueSize);
        check(inside_some_region(*s.memory, l.desc, virtio::desc_table_bytes(n)));
        check(inside_some_region(*s.memory, l.avail, virtio::avail_ring_bytes(n)));
        check(inside_some_region(*s.memory, l.used, virtio::used_ring_bytes(n)));
        check(reinterpret_cast<uintptr_t>(l.desc) % 16 == 0);
        check(reinterpret_cast<uintptr_t>(l.used) % 4 == 0);
        // Touch both ends of every area, as a worker would (guarded: files may shrink).
        volatile uint16_t sink = 0;
        uintptr_t fault = 0;
        run_guarded(
            [&] {
                sink = l.desc[0].next;
                sink = l.desc[n - 1].next;
                sink = l.avail->idx;
                sink = l.avail->ring[n];  // used_event
                sink = l.used->idx;
                sink = static_cast<uint16_t>(l.used->ring[n - 1].len);
            },
            &fault);
        last_avail_[q % 256] = static_cast<uint16_t>(s.vring_base);
        if (std::getenv("VNET_FUZZ_LOG") != nullptr) {
            make_logger("fuzz.sock")->info("queue {} ready (size {})", q, n);
        }
    }
    // A packed queue (VIRTIO_F_RING_PACKED): any size 1..32768, the
    // descriptor ring 16-aligned and the two event areas 4-aligned, each
    // inside guest memory (virtio 1.2 §2.8.10.1), touched at both ends.
    static void check_packed(const QueueSnapshot& s, const virtio::PackedRingLayout& l) {
        check(s.memory != nullptr && l.desc != nullptr && l.driver_event != nullptr &&
              l.device_event != nullptr);
        const uint32_t n = l.size;
        check(n != 0 && n <= 32768);
        check(inside_some_region(*s.memory, l.desc, size_t{n} * sizeof(virtio::PackedDesc)));
        check(inside_some_region(*s.memory, l.driver_event, sizeof(virtio::PackedEventSuppress)));
        check(inside_some_region(*s.memory, l.device_event, sizeof(virtio::PackedEventSuppress)));
        check(reinterpret_cast<uintptr_t>(l.desc) % 16 == 0);
        check(reinterpret_cast<uintptr_t>(l.driver_event) % 4 == 0);
        check(reinterpret_cast<uintptr_t>(l.device_event) % 4 == 0);
        volatile uint16_t sink = 0;
        uintptr_t fault = 0;
        run_guarded(
            [&] {
                sink = l.desc[0].flags;
                sink = l.desc[n - 1].flags;
                sink = l.driver_event->flags;
                sink = l.device_event->flags;
            },
            &fault);
    }

    uint32_t on_queue_stopped(VhostUserDevice& device, uint32_t q) override {
        check(!device.queue_ready(q));
        return use_stop_value ? stop_value : last_avail_[q % 256];
    }
    void on_call_fd_changed(VhostUserDevice& device, uint32_t q, int fd) override {
        check(device.queue_ready(q));
        check(fd == -1 || ::fcntl(fd, F_GETFD) >= 0);
    }

    bool use_stop_value = false;
    uint16_t stop_value = 0;

private:
    uint16_t last_avail_[256] = {};
};

class Session {
public:
    Session() {
        pool_.push_back(make_memfd(64 * 1024, 0));
        pool_.push_back(UniqueFd(::eventfd(0, EFD_CLOEXEC)));
        pool_.push_back(UniqueFd(::eventfd(0, EFD_CLOEXEC)));
        int p[2];
        if (::pipe2(p, O_CLOEXEC) == 0) {
            ::close(p[0]);
            pool_.push_back(UniqueFd(p[1]));
        }
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
            ::close(sv[1]);
            pool_.push_back(UniqueFd(sv[0]));
        }
        pool_.push_back(make_memfd(1 << 20, 1));
        reconnect(2);
        open_wire();
    }

    void run(ByteReader& in) {
        for (int ops = 0; ops < kMaxOps && !in.empty(); ++ops) {
            switch (in.read<uint8_t>() % 8) {
                case 0:
                    op_message(in);
                    break;
                case 1:
                    op_wire(in);
                    break;
                case 2: {
                    const uint32_t size = in.read<uint32_t>() % (4u << 20);
                    const uint8_t seals = in.read<uint8_t>();
                    add_to_pool(make_memfd(size, seals % 3));
                    break;
                }
                case 3:
                    op_guest_write(in);
                    break;
                case 4: {
                    const int fd = pool_fd(in.read<uint8_t>());
                    const uint32_t size = in.read<uint32_t>() % (4u << 20);
                    if (fd >= 0) {
                        (void)!::ftruncate(fd, size);
                    }
                    break;
                }
                case 5:
                    observer_.use_stop_value = (in.read<uint8_t>() & 1) != 0;
                    observer_.stop_value = in.read<uint16_t>();
                    break;
                case 6:
                    reconnect(in.read<uint8_t>() % 4 + 1);
                    break;
                case 7:
                    add_to_pool(UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)));
                    break;
            }
        }
    }

private:
    static UniqueFd make_memfd(uint32_t size, int seal_mode) {
        UniqueFd fd(::memfd_create("fuzz", MFD_CLOEXEC | (seal_mode != 0 ? MFD_ALLOW_SEALING : 0)));
        if (fd && ::ftruncate(fd.get(), size) == 0) {
            if (seal_mode == 1) {
                ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK);
            } else if (seal_mode == 2) {
                ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW);
            }
        }
        return fd;
    }

    void add_to_pool(UniqueFd fd) {
        if (fd && pool_.size() < kMaxPool) {
            pool_.push_back(std::move(fd));
        }
    }

    int pool_fd(uint8_t index) const {
        return pool_.empty() ? -1 : pool_[index % pool_.size()].get();
    }

    void reconnect(uint32_t pairs) {
        device_.reset();  // stops its queues first
        DeviceConfig config;
        config.name = "fuzz.sock";
        config.max_queue_pairs = pairs;
        // Half the devices have an MTU, so GET_CONFIG (offered with it) is reached.
        if (pairs % 2 == 0) {
            config.mtu = 9000;
        }
        device_ = std::make_unique<VhostUserDevice>(config, &observer_);
    }

    void open_wire() {
        int sv[2];
        check(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        wire_front_.reset(sv[0]);
        wire_back_.reset(sv[1]);
        reader_ = MessageReader{};
    }

    void dispatch(Message& msg) {
        DispatchResult r = device_->handle_message(msg, *reply_);
        check(msg.fd_count == 0);  // every fd was kept or closed
        if (r.has_reply) {
            // QEMU accepts only flags 0x5 and the exact size.
            check(reply_->header.flags == kReplyFlags);
            check(reply_->header.request == msg.header.request);
            if (msg.header.request == static_cast<uint32_t>(Request::get_config)) {
                // The config space range asked for, or the spec's way to
                // say no: an empty payload.
                check(reply_->header.size == msg.header.size || reply_->header.size == 0);
            } else {
                check(reply_->header.size == expected_reply_size(msg.header.request));
            }
        }
        if (r.disconnect) {
            check(device_->is_broken() || r.error == MessageError::device_broken);
            for (uint32_t q = 0; q < device_->queue_count(); ++q) {
                check(!device_->queue_ready(q));
            }
            reconnect(2);
        }
    }

    void op_message(ByteReader& in) {
        Message& m = *request_;
        m.close_fds();
        m.header.request = in.read<uint32_t>();
        m.header.flags = in.read<uint32_t>();
        const uint16_t size = in.read<uint16_t>();
        const uint8_t nfds = in.read<uint8_t>() % 10;
        for (uint8_t i = 0; i < nfds; ++i) {
            const int fd = pool_fd(in.read<uint8_t>());
            if (fd >= 0 && m.fd_count < kMaxFdsPerMessage) {
                m.fds[m.fd_count++] = UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
            }
        }
        // Past 4096 the reader refuses before dispatch; here the size is the
        // declared one, clamped to what the buffer holds.
        m.header.size = std::min<uint32_t>(size, kMaxPayloadSize);
        std::memset(m.payload.data(), 0, m.header.size);
        in.read_bytes(m.payload.data(), m.header.size);
        dispatch(m);
    }

    void op_wire(ByteReader& in) {
        const uint16_t len = in.read<uint16_t>() % 8192;
        const uint8_t fd_index = in.read<uint8_t>();
        std::vector<uint8_t> bytes(len);
        const size_t n = in.read_bytes(bytes.data(), len);
        if (n > 0) {
            iovec iov{bytes.data(), n};
            union {
                cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
            } control{};
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            const int fd = fd_index == 0xff ? -1 : pool_fd(fd_index);
            if (fd >= 0) {
                msg.msg_control = control.buf;
                msg.msg_controllen = sizeof control.buf;
                cmsghdr* c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
            }
            if (::sendmsg(wire_front_.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                open_wire();  // a full socket: start over, as after a drop
                return;
            }
        }
        for (;;) {
            ReceiveResult r = reader_.read(wire_back_.get(), *request_);
            if (r == ReceiveResult::need_more) {
                return;
            }
            if (r != ReceiveResult::message) {
                open_wire();  // the connection would be closed
                reconnect(2);
                return;
            }
            check(request_->header.size <= kMaxPayloadSize);
            check(request_->fd_count <= kMaxFdsPerMessage);
            dispatch(*request_);
        }
    }

    void op_guest_write(ByteReader& in) {
        const int fd = pool_fd(in.read<uint8_t>());
        const uint32_t offset = in.read<uint32_t>() % (4u << 20);
        const uint16_t len = in.read<uint16_t>() % 1024;
        uint8_t bytes[1024];
        const size_t n = in.read_bytes(bytes, len);
        if (fd >= 0) {
            (void)!::pwrite(fd, bytes, n, offset);
        }
    }

    CheckingObserver observer_;
    std::unique_ptr<VhostUserDevice> device_;
    std::vector<UniqueFd> pool_;
    UniqueFd wire_front_;
    UniqueFd wire_back_;
    MessageReader reader_;
    std::unique_ptr<Message> request_ = std::make_unique<Message>();
    std::unique_ptr<Message> reply_ = std::make_unique<Message>();
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // Quiet by default; VNET_FUZZ_LOG=info shows what a seed does.
    const char* level = std::getenv("VNET_FUZZ_LOG");
    vnet::set_log_level(level != nullptr ? level : "off");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const int fds_before = open_fd_count();
    {
        ByteReader in(data, size);
        Session session;
        session.run(in);
    }
    // Hostile-input rule 3: nothing a front end sent outlives its session.
    check(open_fd_count() == fds_before);
    check(live_memory_mappings() == 0);
    return 0;
}
