// TapXdpProgram: an XDP program from a BPF object file, loaded and attached
// to one tap for as long as this object lives (reference/kernel-datapath.md
// row 6). vnetd writes each guest frame into the tap; the program judges it
// in the kernel before the stack sees it: XDP_DROP (counted in the tap's
// rx_dropped), XDP_PASS, XDP_TX, or XDP_REDIRECT through a devmap.
//
// Start-up only: open, pick the program, load, fill redirect_map, attach.
// Every failure throws PortSetupError naming the device, the file, the
// section and libbpf's error text. Nothing here runs per packet: once
// attached, the program runs inside tun's write path.
//
// Attach mode: native (XDP_FLAGS_DRV_MODE) runs on tun's build_skb path,
// which vnetd's taps take (O_NONBLOCK, sndbuf INT_MAX; ports/tap/tap_device.hpp);
// generic (XDP_FLAGS_SKB_MODE) runs on the skb afterwards. XdpMode::auto_select
// tries native first. XDP_FLAGS_UPDATE_IF_NOEXIST: a program someone else
// attached is never replaced.
//
// The destructor detaches, but only if the device still runs the program
// this object attached (its id is queried first, and the detach itself is
// conditional on our fd, XDP_FLAGS_REPLACE): a program attached by someone
// else in the meantime is left alone.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ports/tap/xdp_options.hpp"

struct bpf_object;
struct bpf_program;
struct bpf_map;

namespace vnet::ports {

// The devmap the redirect program uses (bpf/xdp_redirect.bpf.c): key 0 holds
// the target ifindex.
inline constexpr const char* kXdpRedirectMapName = "redirect_map";

struct TapXdpOptions {
    XdpProgramSpec program;  // an empty section picks the object's first XDP program
    XdpMode mode = XdpMode::auto_select;
    // When set: redirect_map[0] = this ifindex, before the program is attached
    // (so no frame ever sees an empty entry). The object must have the map.
    std::optional<unsigned> redirect_ifindex;
};

// The ifindex of `ifname`, the xdp_redirect target, in vnetd's network
// namespace. Throws PortSetupError naming `device` and the key if there is
// no such interface.
unsigned xdp_redirect_target(std::string_view device, const std::string& ifname);

class TapXdpProgram {
public:
    // `device` names the tap in messages ("tap 'vt1'"); `ifindex` is where
    // the program is attached, in vnetd's network namespace.
    TapXdpProgram(std::string device, unsigned ifindex, const TapXdpOptions& options);
    ~TapXdpProgram();
    TapXdpProgram(const TapXdpProgram&) = delete;
    TapXdpProgram& operator=(const TapXdpProgram&) = delete;
    TapXdpProgram(TapXdpProgram&&) = delete;
    TapXdpProgram& operator=(TapXdpProgram&&) = delete;

    const std::string& device() const noexcept { return device_; }
    unsigned ifindex() const noexcept { return ifindex_; }
    const std::string& file() const noexcept { return file_; }
    // The ELF section the program came from, and its function name.
    const std::string& section() const noexcept { return section_; }
    const std::string& program_name() const noexcept { return program_name_; }
    // native or generic: what the kernel accepted (never auto_select).
    XdpMode mode() const noexcept { return mode_; }
    // The kernel's id of the loaded program (bpftool prog show id N).
    uint32_t program_id() const noexcept { return program_id_; }
    std::optional<unsigned> redirect_ifindex() const noexcept { return redirect_ifindex_; }

private:
    struct ObjectCloser {
        void operator()(bpf_object* object) const noexcept;
    };

    void open_object();
    bpf_program* select_program(const std::string& wanted_section);
    void load(bpf_program* program);
    bpf_map* find_redirect_map();
    void fill_redirect_map(bpf_map* map, unsigned target_ifindex);
    void attach(XdpMode wanted);
    bool try_attach(XdpMode mode, int* error);
    void detach() noexcept;
    std::string what_program() const;

    std::string device_;
    unsigned ifindex_;
    std::string file_;
    std::string section_;
    std::string program_name_;
    std::unique_ptr<bpf_object, ObjectCloser> object_;
    int program_fd_ = -1;  // owned by object_
    uint32_t program_id_ = 0;
    XdpMode mode_ = XdpMode::auto_select;
    std::optional<unsigned> redirect_ifindex_;
};

}  // namespace vnet::ports
