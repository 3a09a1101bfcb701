// Counters of a network device inside a namespace: the numbers of
// /sys/class/net/<dev>/statistics (both come from dev_get_stats()), read
// over rtnetlink because /sys shows the namespace it was mounted in, not
// the one a device lives in. The socket is opened inside the namespace once;
// each read is one RTM_GETLINK round trip (microseconds, so a measurement
// window's edges are sharp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vnet::bench {

struct LinkStats {
    uint64_t rx_packets = 0;
    uint64_t rx_dropped = 0;
    uint64_t tx_packets = 0;
    uint64_t tx_dropped = 0;
    uint64_t rx_bytes = 0;
    uint64_t tx_bytes = 0;
    // What a tap "received" from its writer: frames the stack took plus the
    // ones XDP or the stack dropped (peer-baselines.md pitfall 6).
    uint64_t rx_frames() const { return rx_packets + rx_dropped; }
};

class LinkStatsReader {
public:
    explicit LinkStatsReader(const std::string& netns);  // throws std::runtime_error
    ~LinkStatsReader();
    LinkStatsReader(const LinkStatsReader&) = delete;
    LinkStatsReader& operator=(const LinkStatsReader&) = delete;

    std::optional<LinkStats> read(const std::string& ifname);

private:
    int fd_ = -1;
    uint32_t seq_ = 0;
};

}  // namespace vnet::bench
