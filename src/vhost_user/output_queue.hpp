// Bounded queue of encoded replies for one back-end connection. The back end
// never blocks on a peer (hostile-input rule 2): replies are written with
// MSG_DONTWAIT, what does not fit waits here, and a peer that lets more than
// `limit` bytes pile up (it does not read its replies) is dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vhost_user/connection.hpp"

namespace vnet::vhost_user {

inline constexpr size_t kDefaultOutputLimit = 64 * 1024;

class OutputQueue {
public:
    explicit OutputQueue(size_t limit = kDefaultOutputLimit) : limit_(limit) {}

    // Appends header + payload (replies from the back end carry no fds).
    // Returns false, queueing nothing, if the queue would exceed its limit.
    bool push(const Message& msg);

    enum class FlushResult : uint8_t { done, pending, peer_gone };
    // Writes as much as the socket takes now.
    FlushResult flush(int fd);

    bool empty() const { return head_ == bytes_.size(); }
    size_t size() const { return bytes_.size() - head_; }

private:
    std::vector<uint8_t> bytes_;
    size_t head_ = 0;  // first byte not yet written
    size_t limit_;
};

}  // namespace vnet::vhost_user
