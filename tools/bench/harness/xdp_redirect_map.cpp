#include "harness/xdp_redirect_map.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "harness/netns.hpp"

namespace vnet::bench {
namespace {

struct Fd {
    int fd;
    explicit Fd(int f) : fd(f) {}
    ~Fd() {
        if (fd >= 0) {
            close(fd);
        }
    }
};

[[noreturn]] void fail(const std::string& what, int err) {
    throw std::runtime_error(what + ": " + std::strerror(err < 0 ? -err : err));
}

}  // namespace

void point_xdp_redirect_map(const std::string& netns, const std::string& ifname,
                            const std::string& target_ifname) {
    NetnsThreadScope scope(netns);
    const unsigned ifindex = if_nametoindex(ifname.c_str());
    const unsigned target = if_nametoindex(target_ifname.c_str());
    if (ifindex == 0 || target == 0) {
        fail("if_nametoindex " + (ifindex == 0 ? ifname : target_ifname), errno);
    }
    uint32_t prog_id = 0;
    int err = bpf_xdp_query_id(static_cast<int>(ifindex), XDP_FLAGS_DRV_MODE, &prog_id);
    if (err < 0 || prog_id == 0) {
        fail("no native XDP program on " + ifname, err < 0 ? err : ENOENT);
    }
    Fd prog(bpf_prog_get_fd_by_id(prog_id));
    if (prog.fd < 0) {
        fail("bpf_prog_get_fd_by_id", errno);
    }
    std::array<uint32_t, 8> map_ids{};
    bpf_prog_info info{};
    info.nr_map_ids = map_ids.size();
    info.map_ids = reinterpret_cast<uint64_t>(map_ids.data());
    uint32_t info_len = sizeof(info);
    err = bpf_obj_get_info_by_fd(prog.fd, &info, &info_len);
    if (err < 0) {
        fail("bpf_obj_get_info_by_fd (program)", err);
    }
    for (uint32_t i = 0; i < info.nr_map_ids && i < map_ids.size(); ++i) {
        Fd map(bpf_map_get_fd_by_id(map_ids[i]));
        if (map.fd < 0) {
            continue;
        }
        bpf_map_info minfo{};
        uint32_t minfo_len = sizeof(minfo);
        if (bpf_obj_get_info_by_fd(map.fd, &minfo, &minfo_len) < 0 ||
            minfo.type != BPF_MAP_TYPE_DEVMAP) {
            continue;
        }
        const uint32_t key = 0;
        const uint32_t value = target;
        err = bpf_map_update_elem(map.fd, &key, &value, BPF_ANY);
        if (err < 0) {
            fail("bpf_map_update_elem (redirect_map[0] = " + target_ifname + ")", err);
        }
        return;
    }
    throw std::runtime_error("the XDP program on " + ifname + " has no devmap");
}

}  // namespace vnet::bench
