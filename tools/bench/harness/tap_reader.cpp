#include "harness/tap_reader.hpp"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <stdexcept>
#include <vector>

#include "harness/netns.hpp"

namespace vnet::bench {
namespace {

// Creates the tap in the calling thread's namespace and brings it up.
int open_tap(const std::string& ifname) {
    const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        throw std::runtime_error(std::string("open /dev/net/tun: ") + std::strerror(errno));
    }
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname.c_str());
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    const int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0 || sock < 0 || ioctl(sock, SIOCGIFFLAGS, &ifr) < 0 ||
        (ifr.ifr_flags |= IFF_UP, ioctl(sock, SIOCSIFFLAGS, &ifr) < 0)) {
        const std::string why = std::strerror(errno);
        if (sock >= 0) {
            close(sock);
        }
        close(fd);
        throw std::runtime_error("tap " + ifname + ": " + why);
    }
    close(sock);
    return fd;
}

}  // namespace

TapReader::TapReader(std::string netns, std::string ifname, std::optional<int> cpu)
    : netns_(std::move(netns)), ifname_(std::move(ifname)) {
    std::promise<void> ready;
    std::future<void> opened = ready.get_future();
    // The thread owns the promise: this constructor may return (and its
    // locals go) while set_value() is still finishing.
    thread_ = std::thread([this, cpu, ready = std::move(ready)]() mutable {
        try {
            NetnsThreadScope scope(netns_);
            fd_ = open_tap(ifname_);
        } catch (...) {
            ready.set_exception(std::current_exception());
            return;
        }
        ready.set_value();
        run(cpu);
    });
    try {
        opened.get();
    } catch (...) {
        thread_.join();
        throw;
    }
}

TapReader::~TapReader() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) {
        thread_.join();
    }
    if (fd_ >= 0) {
        close(fd_);
    }
}

void TapReader::run(std::optional<int> cpu) {
    if (cpu) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(*cpu, &set);
        sched_setaffinity(0, sizeof(set), &set);
    }
    std::vector<char> buf(65536);
    while (!stop_.load(std::memory_order_relaxed)) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) {
            continue;
        }
        // Drain: one read per frame is all a tap offers.
        for (int i = 0; i < 4096; ++i) {
            if (::read(fd_, buf.data(), buf.size()) <= 0) {
                break;
            }
            frames_.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

}  // namespace vnet::bench
