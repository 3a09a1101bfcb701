#include "ports/tap/tap_device.hpp"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "common/log.hpp"
#include "ports/setup_error.hpp"
#include "ports/tap/netdev_ioctl.hpp"

namespace vnet::ports {
namespace {

constexpr const char* kTunPath = "/dev/net/tun";
// How long a tap that is still attached elsewhere (EBUSY) is waited for: a
// process that just died keeps its tap until the kernel releases its files,
// which for io_uring's registered files happens from a workqueue, tens of
// milliseconds after the exit. A restarted vnetd waits for its own old tap
// rather than failing; one that another live process holds fails after it.
constexpr auto kBusyTapWait = std::chrono::seconds(5);
constexpr auto kBusyTapRetry = std::chrono::milliseconds(5);
constexpr unsigned kRequiredFlags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;

std::string label_for(const std::string& name) {
    return "tap '" + (name.empty() ? std::string("(kernel-named)") : name) + "'";
}

UniqueFd open_tun_control(std::string_view label) {
    // O_NONBLOCK: a condition of tun_can_build_skb (the build_skb/XDP fast path),
    // and the datapath waits in epoll, never in read/write.
    UniqueFd fd(::open(kTunPath, O_RDWR | O_NONBLOCK | O_CLOEXEC));
    if (!fd) {
        throw_setup_error(label, std::string("open ") + kTunPath, errno);
    }
    return fd;
}

unsigned read_features(int fd, std::string_view label) {
    unsigned features = 0;
    if (::ioctl(fd, TUNGETFEATURES, &features) < 0) {
        throw_setup_error(label, "TUNGETFEATURES", errno);
    }
    return features;
}

void validate_options(const TapOptions& options, std::string_view label) {
    if (options.name.size() >= IFNAMSIZ) {
        throw_option_error(label, "interface name is " + std::to_string(options.name.size()) +
                                      " characters; Linux allows at most " +
                                      std::to_string(IFNAMSIZ - 1));
    }
    if (options.napi_frags && !options.napi) {
        throw_option_error(label,
                           "napi_frags needs napi (tun requires IFF_NAPI with "
                           "IFF_NAPI_FRAGS)");
    }
    // tun: TUNSETVNETHDRSZ rejects sizes below sizeof(struct virtio_net_hdr).
    if (options.vnet_header_size < virtio::kLegacyNetHeaderSize) {
        throw_option_error(label, "vnet_header_size " + std::to_string(options.vnet_header_size) +
                                      " is below the 10-byte virtio_net_hdr");
    }
}

unsigned requested_flags(const TapOptions& options, unsigned offered, std::string_view label) {
    if ((offered & kRequiredFlags) != kRequiredFlags) {
        throw_setup_error(label, "TUNGETFEATURES check", EOPNOTSUPP,
                          "this kernel's tun lacks IFF_TAP|IFF_NO_PI|IFF_VNET_HDR");
    }
    struct Optional {
        bool wanted;
        unsigned flag;
        const char* option;
    };
    const Optional optionals[] = {
        {options.multi_queue, IFF_MULTI_QUEUE, "multi_queue (IFF_MULTI_QUEUE)"},
        {options.napi, IFF_NAPI, "napi (IFF_NAPI)"},
        {options.napi_frags, IFF_NAPI_FRAGS, "napi_frags (IFF_NAPI_FRAGS)"},
    };
    unsigned flags = kRequiredFlags;
    for (const Optional& o : optionals) {
        if (!o.wanted) {
            continue;
        }
        if ((offered & o.flag) == 0) {
            throw_setup_error(label, std::string("option ") + o.option, EOPNOTSUPP,
                              "TUNGETFEATURES does not offer it on this kernel; turn the "
                              "option off");
        }
        flags |= o.flag;
    }
    return flags;
}

std::string_view tunsetiff_hint(int error_number) {
    switch (error_number) {
        case EBUSY:
            return "a single-queue tap of that name is already open elsewhere; close it or "
                   "use multi_queue on every opener";
        case EINVAL:
            return "an existing device of that name has other flags (tun vs tap, "
                   "multi_queue, napi) or the name is invalid";
        default:
            return {};
    }
}

}  // namespace

unsigned TapDevice::kernel_features() {
    UniqueFd fd = open_tun_control("tun");
    return read_features(fd.get(), "tun");
}

TapDevice::TapDevice(const TapOptions& options) : name_(options.name) {
    if (options.handed_over_fd >= 0) {
        fd_.reset(options.handed_over_fd);
    }
    validate_options(options, label());
    if (fd_) {
        adopt_handed_over();
    } else {
        fd_ = open_tun_control(label());
        const unsigned flags = requested_flags(options, read_features(fd_.get(), label()), label());
        attach_when_released(flags);
    }

    configure_queue(options);
    configure_link(options);

    make_logger(label())->info("opened ({}, ifindex {}, flags {:#x}, vnet header {} bytes{})",
                               options.handed_over_fd >= 0 ? "handed over"
                               : created_                  ? "created"
                                                           : "attached",
                               ifindex_, flags_, vnet_header_size_,
                               options.persist ? ", persistent" : "");
}

void TapDevice::attach_when_released(unsigned flags) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    bool waited = false;
    for (;;) {
        // Whether we create it is asked again on every try: a
        // non-persistent tap of a dead process vanishes when released.
        created_ = name_.empty() || ::if_nametoindex(name_.c_str()) == 0;
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, name_.data(), name_.size());
        ifr.ifr_flags = static_cast<short>(flags);
        if (::ioctl(fd_.get(), TUNSETIFF, &ifr) == 0) {
            name_ = ifr.ifr_name;  // the kernel's choice when we passed an empty name
            break;
        }
        const int err = errno;
        if (err != EBUSY || Clock::now() - start >= kBusyTapWait) {
            throw_setup_error(label(), "TUNSETIFF", err,
                              waited ? "still attached elsewhere after waiting " +
                                           std::to_string(kBusyTapWait.count()) +
                                           " s: " + std::string(tunsetiff_hint(err))
                                     : std::string(tunsetiff_hint(err)));
        }
        if (!waited) {
            make_logger(label())->warn(
                "attached elsewhere (EBUSY): waiting up to {} s for its previous owner to "
                "release it",
                kBusyTapWait.count());
            waited = true;
        }
        std::this_thread::sleep_for(kBusyTapRetry);
    }
    if (waited) {
        make_logger(label())->info(
            "released after {} ms",
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    }
}

void TapDevice::adopt_handed_over() {
    ifreq ifr{};
    if (::ioctl(fd_.get(), TUNGETIFF, &ifr) < 0) {
        throw_setup_error(label(), "TUNGETIFF (handed-over fd)", errno);
    }
    const std::string device(ifr.ifr_name, strnlen(ifr.ifr_name, IFNAMSIZ));
    if (!name_.empty() && device != name_) {
        throw_setup_error(label(), "handed-over fd", EINVAL,
                          "it is a queue of tap '" + device + "'");
    }
    name_ = device;
    created_ = false;
    // A queue its last owner had detached (a guest's disabled queue pair)
    // is attached again, as a newly opened one is; tun says EINVAL for one
    // that is attached already.
    if ((ifr.ifr_flags & IFF_MULTI_QUEUE) != 0) {
        ifreq attach{};
        attach.ifr_flags = IFF_ATTACH_QUEUE;
        if (::ioctl(fd_.get(), TUNSETQUEUE, &attach) < 0 && errno != EINVAL) {
            throw_setup_error(label(), "TUNSETQUEUE attach (handed-over fd)", errno);
        }
    }
}

void TapDevice::configure_queue(const TapOptions& options) {
    ifreq ifr{};
    if (::ioctl(fd_.get(), TUNGETIFF, &ifr) < 0) {
        throw_setup_error(label(), "TUNGETIFF", errno);
    }
    flags_ = static_cast<unsigned short>(ifr.ifr_flags);

    int header_size = static_cast<int>(options.vnet_header_size);
    if (::ioctl(fd_.get(), TUNSETVNETHDRSZ, &header_size) < 0) {
        throw_setup_error(label(), "TUNSETVNETHDRSZ " + std::to_string(header_size), errno);
    }
    vnet_header_size_ = options.vnet_header_size;

    // VERSION_1 headers are little-endian (virtio 1.2 §5.1.6). tun uses the
    // host's order unless told otherwise, which is already right on LE hosts.
    if constexpr (std::endian::native == std::endian::big) {
        int little_endian = 1;
        if (::ioctl(fd_.get(), TUNSETVNETLE, &little_endian) < 0) {
            throw_setup_error(label(), "TUNSETVNETLE", errno,
                              "kernel lacks CONFIG_TUN_VNET_CROSS_LE");
        }
    }

    set_sndbuf_unlimited();

    // No offloads until the guest's features are known, as QEMU does at open:
    // a reused persistent tap must not keep a previous guest's TSO, which
    // would hand this guest GSO frames it never agreed to. Not on a
    // handed-over queue: the vnetd we replace still serves its guest with
    // them until it lets go, and goes on doing so if we fail; the guest's
    // next negotiation here sets them.
    if (options.handed_over_fd < 0) {
        set_offloads(TunOffloads{});
    }

    if (options.persist) {
        set_persist(true);
    }
}

void TapDevice::set_sndbuf_unlimited() {
    // INT_MAX is tun's default (tun_chr_open), but an attached persistent tap
    // may carry a finite value from its last owner. A finite sndbuf turns off
    // tun_can_build_skb (so the build_skb path and native XDP) and makes
    // writes allocate through sock_alloc_send_pskb, where they can block or
    // fail with EAGAIN (§1 rows 5 and 13). QEMU also sets INT_MAX. It is per
    // queue (each queue is a socket of its own).
    int sndbuf = INT_MAX;
    if (::ioctl(fd_.get(), TUNSETSNDBUF, &sndbuf) < 0) {
        throw_setup_error(label(), "TUNSETSNDBUF INT_MAX", errno);
    }
}

TapDevice TapDevice::another_queue_of(const TapDevice& first, int handed_over_fd) {
    TapDevice q;
    q.name_ = first.name_;
    if (handed_over_fd >= 0) {
        q.fd_.reset(handed_over_fd);
    }
    if ((first.flags_ & IFF_MULTI_QUEUE) == 0) {
        throw_option_error(q.label(), "a second queue needs a device opened with multi_queue");
    }
    if (q.fd_) {
        q.adopt_handed_over();
        int header_size = static_cast<int>(first.vnet_header_size_);
        if (::ioctl(q.fd_.get(), TUNSETVNETHDRSZ, &header_size) < 0) {
            throw_setup_error(q.label(), "TUNSETVNETHDRSZ " + std::to_string(header_size), errno);
        }
    } else {
        q.fd_ = open_tun_control(q.label());
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, q.name_.data(), q.name_.size());
        // TUNGETIFF reports IFF_VNET_HDR and friends too; TUNSETIFF takes them back.
        ifr.ifr_flags = static_cast<short>(
            first.flags_ & (kRequiredFlags | IFF_MULTI_QUEUE | IFF_NAPI | IFF_NAPI_FRAGS));
        if (::ioctl(q.fd_.get(), TUNSETIFF, &ifr) < 0) {
            const int err = errno;
            throw_setup_error(q.label(), "TUNSETIFF (another queue)", err, tunsetiff_hint(err));
        }
    }
    q.set_sndbuf_unlimited();
    // Header size, offloads, persistence and the link are the device's:
    // set once by the first queue.
    q.ifindex_ = first.ifindex_;
    q.flags_ = first.flags_;
    q.vnet_header_size_ = first.vnet_header_size_;
    q.offloads_ = first.offloads_;
    return q;
}

void TapDevice::set_queue_attached(bool attached) {
    if (attached == attached_) {
        return;
    }
    ifreq ifr{};
    ifr.ifr_flags = static_cast<short>(attached ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE);
    if (::ioctl(fd_.get(), TUNSETQUEUE, &ifr) < 0) {
        throw_setup_error(label(), attached ? "TUNSETQUEUE attach" : "TUNSETQUEUE detach", errno);
    }
    attached_ = attached;
}

void TapDevice::configure_link(const TapOptions& options) {
    ifindex_ = netdev::ifindex(label(), name_);
    if (options.mtu) {
        netdev::set_mtu(label(), name_, *options.mtu);
    }
    if (options.txqueuelen) {
        netdev::set_txqueuelen(label(), name_, *options.txqueuelen);
    }
    if (options.link_up) {
        netdev::set_link_up(label(), name_, true);
    }
}

bool TapDevice::napi() const noexcept {
    return (flags_ & IFF_NAPI) != 0;
}

TunOffloads TapDevice::set_offloads(TunOffloads wanted) {
    int last_error = 0;
    for (const TunOffloads candidate : tun_offload_fallbacks(wanted)) {
        if (::ioctl(fd_.get(), TUNSETOFFLOAD, static_cast<unsigned long>(candidate.bits())) == 0) {
            if (candidate != wanted) {
                make_logger(label())->warn("TUNSETOFFLOAD {} refused; applied {}",
                                           to_string(wanted), to_string(candidate));
            }
            offloads_ = candidate;
            return candidate;
        }
        last_error = errno;
        // tun returns EINVAL for bits it does not know; anything else will
        // not get better by dropping bits.
        if (last_error != EINVAL) {
            break;
        }
    }
    throw_setup_error(label(), "TUNSETOFFLOAD " + to_string(wanted), last_error);
}

void TapDevice::set_persist(bool persist) {
    if (::ioctl(fd_.get(), TUNSETPERSIST, static_cast<unsigned long>(persist ? 1 : 0)) < 0) {
        throw_setup_error(label(), persist ? "TUNSETPERSIST 1" : "TUNSETPERSIST 0", errno);
    }
}

unsigned TapDevice::txqueuelen() const {
    return netdev::txqueuelen(label(), name_);
}

void TapDevice::set_txqueuelen(unsigned len) {
    netdev::set_txqueuelen(label(), name_, len);
}

unsigned TapDevice::mtu() const {
    return netdev::mtu(label(), name_);
}

void TapDevice::set_mtu(unsigned value) {
    netdev::set_mtu(label(), name_, value);
}

void TapDevice::set_link_up(bool up) {
    netdev::set_link_up(label(), name_, up);
}

std::string TapDevice::label() const {
    return label_for(name_);
}

}  // namespace vnet::ports
