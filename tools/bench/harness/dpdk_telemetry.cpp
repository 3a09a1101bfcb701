#include "harness/dpdk_telemetry.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "harness/rate_meter.hpp"

namespace vnet::bench {
namespace {

// The telemetry library's largest reply ("max_output_len" in its greeting).
constexpr size_t kMaxReply = 16384;

std::string receive(int fd) {
    std::string reply(kMaxReply, '\0');
    const ssize_t n = recv(fd, reply.data(), reply.size(), 0);
    if (n <= 0) {
        throw MeasureError(std::string("DPDK telemetry: no reply: ") +
                           (n == 0 ? "closed" : std::strerror(errno)));
    }
    reply.resize(static_cast<size_t>(n));
    return reply;
}

}  // namespace

DpdkTelemetry::~DpdkTelemetry() {
    if (fd_ >= 0) {
        close(fd_);
    }
}

void DpdkTelemetry::connect() {
    const std::string path = runtime_dir_ + "/dpdk_telemetry.v2";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
        throw MeasureError("DPDK telemetry: path too long: " + path);
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw MeasureError(std::string("DPDK telemetry: socket: ") + std::strerror(errno));
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
        const int err = errno;
        close(fd);
        throw MeasureError("DPDK telemetry: " + path + ": " + std::strerror(err));
    }
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    fd_ = fd;
    receive(fd_);  // the greeting: {"version": ..., "pid": ..., "max_output_len": ...}
}

uint64_t DpdkTelemetry::rx_packets(int port) {
    if (fd_ < 0) {
        connect();
    }
    const std::string command = "/ethdev/stats," + std::to_string(port);
    if (send(fd_, command.data(), command.size(), MSG_NOSIGNAL) < 0) {
        throw MeasureError(std::string("DPDK telemetry: send: ") + std::strerror(errno));
    }
    const std::string reply = receive(fd_);
    const nlohmann::json j = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("/ethdev/stats") || !j["/ethdev/stats"].is_object() ||
        !j["/ethdev/stats"].contains("ipackets")) {
        throw MeasureError("DPDK telemetry: unexpected reply to " + command + ": " +
                           reply.substr(0, 200));
    }
    return j["/ethdev/stats"]["ipackets"].get<uint64_t>();
}

}  // namespace vnet::bench
