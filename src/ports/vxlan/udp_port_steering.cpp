#include "ports/vxlan/udp_port_steering.hpp"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.hpp"
#include "ports/setup_error.hpp"
#include "ports/tap/libbpf_log.hpp"
#include "ports/tap/xdp_object_path.hpp"

namespace vnet::ports {
namespace {

constexpr const char* kObject = "udp_port_steer.bpf.o";
constexpr const char* kPrivilegeHint =
    "socket lookup programs need CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN)";

// bpf/udp_port_steer.bpf.c's struct steer_rule, field for field.
struct SteerRule {
    uint32_t port = 0;
    uint32_t family = 0;
    std::array<uint32_t, 4> addr{};
};

SteerRule make_rule(const std::string& owner, uint16_t port, const std::string& local) {
    SteerRule rule;
    rule.port = port;
    if (local.empty()) {
        return rule;
    }
    if (inet_pton(AF_INET, local.c_str(), rule.addr.data()) == 1) {
        rule.family = AF_INET;
    } else if (inet_pton(AF_INET6, local.c_str(), rule.addr.data()) == 1) {
        rule.family = AF_INET6;
    } else {
        throw_option_error(owner, "'" + local + "' is not an IPv4 or IPv6 address");
    }
    return rule;
}

}  // namespace

void UdpPortSteering::ObjectCloser::operator()(bpf_object* object) const noexcept {
    bpf_object__close(object);
}

void UdpPortSteering::LinkCloser::operator()(bpf_link* link) const noexcept {
    bpf_link__destroy(link);
}

UdpPortSteering::UdpPortSteering(std::string owner, int socket_fd, uint16_t port,
                                 const std::string& local_address)
    : owner_(std::move(owner)), port_(port) {
    if (port == 0) {
        throw_option_error(owner_, "steering needs a UDP port, not 0");
    }
    const SteerRule rule = make_rule(owner_, port, local_address);
    route_libbpf_log();
    const std::string file = find_xdp_object(kObject);
    object_.reset(bpf_object__open_file(file.c_str(), nullptr));
    if (!object_) {
        throw_setup_error(owner_, "opening " + file + " (installed with vnetd's BPF objects)",
                          errno);
    }
    if (int err = bpf_object__load(object_.get()); err != 0) {
        throw_setup_error(owner_, "loading " + file, std::abs(err), kPrivilegeHint);
    }
    bpf_program* program = bpf_object__find_program_by_name(object_.get(), "udp_port_steer");
    bpf_map* rules = bpf_object__find_map_by_name(object_.get(), "steer_rule");
    bpf_map* sockets = bpf_object__find_map_by_name(object_.get(), "steer_socket");
    if (program == nullptr || rules == nullptr || sockets == nullptr) {
        throw_option_error(owner_, file + " has no udp_port_steer program or its maps");
    }
    const uint32_t key = 0;
    const uint64_t socket_value = static_cast<uint64_t>(socket_fd);
    if (bpf_map_update_elem(bpf_map__fd(sockets), &key, &socket_value, BPF_ANY) != 0) {
        throw_setup_error(owner_, "putting the UDP socket in the steering map", errno);
    }
    if (bpf_map_update_elem(bpf_map__fd(rules), &key, &rule, BPF_ANY) != 0) {
        throw_setup_error(owner_, "setting the steering rule", errno);
    }
    UniqueFd netns(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!netns) {
        throw_setup_error(owner_, "opening the network namespace", errno);
    }
    link_.reset(bpf_program__attach_netns(program, netns.get()));
    if (!link_) {
        throw_setup_error(owner_, "attaching the socket lookup program to the namespace", errno,
                          kPrivilegeHint);
    }
    bpf_prog_info info{};
    uint32_t info_len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(program), &info, &info_len) == 0) {
        program_id_ = info.id;
    }
}

UdpPortSteering::~UdpPortSteering() = default;

}  // namespace vnet::ports
