#include "vhost_user/backend_connection.hpp"

#include "io/eventfd.hpp"

namespace vnet::vhost_user {

BackendConnection::BackendConnection(io::Reactor& reactor, UniqueFd socket, DeviceConfig config,
                                     QueueObserver* observer, ClosedCallback on_closed,
                                     size_t output_limit)
    : reactor_(reactor),
      socket_(std::move(socket)),
      log_(make_logger(config.name)),
      device_(std::make_unique<VhostUserDevice>(std::move(config), observer)),
      on_closed_(std::move(on_closed)),
      output_(output_limit),
      request_(std::make_unique<Message>()),
      reply_(std::make_unique<Message>()) {
    io::set_nonblocking(socket_.get());
    reactor_.watch(socket_.get(), EPOLLIN, [this](uint32_t events) { on_events(events); });
    log_->info("front end connected");
}

BackendConnection::~BackendConnection() {
    if (socket_) {
        reactor_.unwatch(socket_.get());
    }
}

void BackendConnection::close(const std::string& why) {
    if (!socket_) {
        return;
    }
    log_->info("connection closed: {}", why);
    reactor_.unwatch(socket_.get());
    socket_.reset();
    device_.reset();  // stops every queue (observer) now
    if (on_closed_) {
        on_closed_();
    }
}

void BackendConnection::on_events(uint32_t events) {
    if ((events & EPOLLOUT) != 0) {
        flush_output();
    }
    if (socket_ && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
        read_messages();  // reads what is left before it sees the EOF
    }
}

void BackendConnection::read_messages() {
    for (int i = 0; i < kMaxMessagesPerWakeup && socket_; ++i) {
        ReceiveResult r = reader_.read(socket_.get(), *request_);
        if (r == ReceiveResult::need_more) {
            return;
        }
        if (r != ReceiveResult::message) {
            close(to_string(r));
            return;
        }
        DispatchResult d = device_->handle_message(*request_, *reply_);
        if (d.has_reply && reply_->fd_count != 0) {
            // A reply with an fd (GET_INFLIGHT_FD) goes out with sendmsg
            // itself, after what is queued; the fd is closed once sent.
            const bool sent = send_fd_reply();
            reply_->close_fds();
            if (!sent) {
                close("front end does not read its replies (fd reply not sent)");
                return;
            }
            continue;
        }
        if (d.has_reply && !output_.push(*reply_)) {
            close("front end does not read its replies (output queue full)");
            return;
        }
        if (d.disconnect) {
            std::string why = "device broken: " + device_->broken_reason();
            flush_output();  // a final reply, best effort
            close(why);
            return;
        }
        if (d.has_reply) {
            flush_output();
        }
    }
    // More may be waiting: level-triggered epoll calls us again.
}

bool BackendConnection::send_fd_reply() {
    flush_output();
    if (!socket_ || !output_.empty()) {
        return false;
    }
    // A small message on a socket with nothing queued: sendmsg takes it at
    // once (bounded by send_message's timeout if the peer's buffer is full).
    return send_message(socket_.get(), *reply_);
}

void BackendConnection::flush_output() {
    if (!socket_) {
        return;
    }
    switch (output_.flush(socket_.get())) {
        case OutputQueue::FlushResult::done:
            if (watching_output_) {
                reactor_.modify(socket_.get(), EPOLLIN);
                watching_output_ = false;
            }
            return;
        case OutputQueue::FlushResult::pending:
            if (!watching_output_) {
                reactor_.modify(socket_.get(), EPOLLIN | EPOLLOUT);
                watching_output_ = true;
            }
            return;
        case OutputQueue::FlushResult::peer_gone:
            close("peer stopped reading (send failed)");
            return;
    }
}

}  // namespace vnet::vhost_user
