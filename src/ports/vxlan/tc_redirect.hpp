// TcRedirect: bpf/tc_redirect.bpf.o attached at the clsact ingress hook of
// one device, handing every frame it receives to another device's egress
// (bpf_redirect). A VXLAN uplink (vxlan_uplink.hpp) is two of them: its tap
// to its vxlan device and back. The kernel runs it; vnetd only loads,
// attaches and, in the destructor, detaches it (and removes the clsact
// qdisc it created), so nothing is left on the devices after vnetd.
#pragma once

#include <memory>
#include <string>

struct bpf_object;

namespace vnet::ports {

class TcRedirect {
public:
    // `device` names the pair for messages ("vxlan uplink 'vx100'").
    // Throws PortSetupError naming the step (open, load, qdisc, attach).
    TcRedirect(std::string device, unsigned from_ifindex, unsigned to_ifindex);
    ~TcRedirect();
    TcRedirect(const TcRedirect&) = delete;
    TcRedirect& operator=(const TcRedirect&) = delete;

    unsigned from_ifindex() const { return from_; }
    unsigned to_ifindex() const { return to_; }
    unsigned program_id() const { return program_id_; }

private:
    struct ObjectCloser {
        void operator()(bpf_object* object) const noexcept;
    };

    std::string device_;
    unsigned from_;
    unsigned to_;
    std::unique_ptr<bpf_object, ObjectCloser> object_;
    int program_fd_ = -1;
    unsigned program_id_ = 0;
    bool created_qdisc_ = false;
};

}  // namespace vnet::ports
