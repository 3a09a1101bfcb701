// The reader of the second tap in the XDP_REDIRECT rows: a tap exists for
// redirected frames only while someone holds it open (tun_xdp_xmit returns
// -ENXIO without a queue), and what it delivers is what the reader reads.
// Creates the tap in a namespace, reads and counts frames on its own thread
// (pinned), stops and closes it on destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

namespace vnet::bench {

class TapReader {
public:
    // Returns once the tap exists and is up; throws std::runtime_error.
    TapReader(std::string netns, std::string ifname, std::optional<int> cpu);
    ~TapReader();
    TapReader(const TapReader&) = delete;
    TapReader& operator=(const TapReader&) = delete;

    const std::string& ifname() const { return ifname_; }
    uint64_t frames() const { return frames_.load(std::memory_order_relaxed); }

private:
    void run(std::optional<int> cpu);

    std::string netns_;
    std::string ifname_;
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> frames_{0};
    std::thread thread_;
};

}  // namespace vnet::bench
