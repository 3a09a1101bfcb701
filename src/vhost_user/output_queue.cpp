#include "vhost_user/output_queue.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace vnet::vhost_user {

bool OutputQueue::push(const Message& msg) {
    const size_t payload = msg.header.size <= kMaxPayloadSize ? msg.header.size : 0;
    const size_t total = sizeof(MessageHeader) + payload;
    if (size() + total > limit_) {
        return false;
    }
    if (head_ > 0 && head_ == bytes_.size()) {
        bytes_.clear();
        head_ = 0;
    }
    const auto* header = reinterpret_cast<const uint8_t*>(&msg.header);
    bytes_.insert(bytes_.end(), header, header + sizeof(MessageHeader));
    bytes_.insert(bytes_.end(), msg.payload.begin(), msg.payload.begin() + payload);
    return true;
}

OutputQueue::FlushResult OutputQueue::flush(int fd) {
    while (!empty()) {
        ssize_t n = ::send(fd, bytes_.data() + head_, size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return FlushResult::pending;
            }
            return FlushResult::peer_gone;
        }
        head_ += static_cast<size_t>(n);
    }
    bytes_.clear();
    head_ = 0;
    return FlushResult::done;
}

}  // namespace vnet::vhost_user
