#include "ports/vxlan/tc_redirect.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdlib>

#include "ports/setup_error.hpp"
#include "ports/tap/libbpf_log.hpp"
#include "ports/tap/xdp_object_path.hpp"

namespace vnet::ports {
namespace {

constexpr const char* kObject = "tc_redirect.bpf.o";
constexpr const char* kPrivilegeHint =
    "tc BPF needs CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN): add the uplink as root";

bpf_tc_hook ingress_hook(unsigned ifindex) {
    bpf_tc_hook hook{};
    hook.sz = sizeof(hook);
    hook.ifindex = static_cast<int>(ifindex);
    hook.attach_point = BPF_TC_INGRESS;
    return hook;
}

bpf_tc_opts attach_opts(int program_fd) {
    bpf_tc_opts opts{};
    opts.sz = sizeof(opts);
    opts.prog_fd = program_fd;
    opts.handle = 1;
    opts.priority = 1;
    return opts;
}

}  // namespace

void TcRedirect::ObjectCloser::operator()(bpf_object* object) const noexcept {
    bpf_object__close(object);
}

TcRedirect::TcRedirect(std::string device, unsigned from_ifindex, unsigned to_ifindex)
    : device_(std::move(device)), from_(from_ifindex), to_(to_ifindex) {
    route_libbpf_log();
    const std::string file = find_xdp_object(kObject);
    object_.reset(bpf_object__open_file(file.c_str(), nullptr));
    if (!object_) {
        throw_setup_error(device_, "opening " + file + " (installed with vnetd's BPF objects)",
                          errno);
    }
    if (int err = bpf_object__load(object_.get()); err != 0) {
        throw_setup_error(device_, "loading " + file, std::abs(err), kPrivilegeHint);
    }
    bpf_program* program = bpf_object__find_program_by_name(object_.get(), "tc_redirect");
    bpf_map* target = bpf_object__find_map_by_name(object_.get(), "redirect_target");
    if (program == nullptr || target == nullptr) {
        throw_option_error(device_, file + " has no tc_redirect program or redirect_target map");
    }
    program_fd_ = bpf_program__fd(program);
    const uint32_t key = 0;
    const uint32_t value = to_;
    if (bpf_map_update_elem(bpf_map__fd(target), &key, &value, BPF_ANY) != 0) {
        throw_setup_error(device_, "setting the redirect target", errno);
    }
    bpf_tc_hook hook = ingress_hook(from_);
    if (int err = bpf_tc_hook_create(&hook); err == 0) {
        created_qdisc_ = true;
    } else if (err != -EEXIST) {
        throw_setup_error(device_, "adding the clsact qdisc", std::abs(err), kPrivilegeHint);
    }
    bpf_tc_opts opts = attach_opts(program_fd_);
    if (int err = bpf_tc_attach(&hook, &opts); err != 0) {
        if (created_qdisc_) {
            hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
            (void)bpf_tc_hook_destroy(&hook);
        }
        throw_setup_error(device_, "attaching the tc program at ingress", std::abs(err),
                          kPrivilegeHint);
    }
    program_id_ = opts.prog_id;
}

TcRedirect::~TcRedirect() {
    bpf_tc_hook hook = ingress_hook(from_);
    bpf_tc_opts opts = attach_opts(0);
    opts.prog_fd = 0;
    (void)bpf_tc_detach(&hook, &opts);  // the device may be gone already: nothing to undo then
    if (created_qdisc_) {
        // Both points: destroying the hook removes the clsact qdisc itself.
        hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
        (void)bpf_tc_hook_destroy(&hook);
    }
}

}  // namespace vnet::ports
