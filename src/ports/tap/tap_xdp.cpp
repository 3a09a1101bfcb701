#include "ports/tap/tap_xdp.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.hpp"
#include "ports/setup_error.hpp"
#include "ports/tap/libbpf_log.hpp"
#include "ports/tap/xdp_object_path.hpp"

namespace vnet::ports {
namespace {

constexpr const char* kRootHint =
    "BPF needs CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN): run vnetd as root";

uint32_t mode_flag(XdpMode mode) {
    return mode == XdpMode::generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
}

// libbpf returns plain errnos and its own codes (LIBBPF_ERRNO__*, from 4000:
// "BPF object format invalid", ...); libbpf_strerror knows both.
[[noreturn]] void throw_libbpf_error(std::string_view device, const std::string& step, int err,
                                     std::string_view hint) {
    err = std::abs(err);
    if (err < __LIBBPF_ERRNO__START) {
        throw_setup_error(device, step, err, hint);
    }
    char text[128];
    libbpf_strerror(err, text, sizeof(text));
    std::string message = std::string(device) + ": " + step + " failed: " + text;
    if (!hint.empty()) {
        message += "; " + std::string(hint);
    }
    throw PortSetupError(std::move(message), err);
}

std::string libbpf_error_text(int err) {
    char text[128];
    libbpf_strerror(std::abs(err), text, sizeof(text));
    return text;
}

std::string_view open_hint(int err) {
    switch (err) {
        case ENOENT:
            return "check the path (a relative one is taken from vnetd's working directory)";
        case EACCES:
        case EPERM:
            return "vnetd cannot read the file";
        default:
            return "it must be a BPF ELF object (clang -O2 -g -target bpf)";
    }
}

std::string_view attach_hint(int err) {
    switch (err) {
        case EBUSY:
        case EEXIST:
            return "another XDP program is attached to the device (ip -d link show lists it; "
                   "ip link set dev NAME xdp off removes it)";
        case EOPNOTSUPP:
            return "the device has no native XDP: use xdp_mode auto or generic";
        case EPERM:
            return kRootHint;
        default:
            return "ip -d link show shows what the device runs; --log-level debug shows "
                   "libbpf's log";
    }
}

// All programs of the object, "name in 'section'", for a message.
std::string list_programs(bpf_object* object) {
    std::string out;
    bpf_program* p = nullptr;
    bpf_object__for_each_program(p, object) {
        out += (out.empty() ? "" : ", ") + std::string(bpf_program__name(p)) + " in '" +
               bpf_program__section_name(p) + "'";
    }
    return out.empty() ? "no programs" : out;
}

}  // namespace

unsigned xdp_redirect_target(std::string_view device, const std::string& ifname) {
    unsigned ifindex = ::if_nametoindex(ifname.c_str());
    if (ifindex == 0) {
        throw_option_error(device, "xdp_redirect '" + ifname +
                                       "': no such network device in vnetd's network namespace");
    }
    return ifindex;
}

void TapXdpProgram::ObjectCloser::operator()(bpf_object* object) const noexcept {
    bpf_object__close(object);
}

TapXdpProgram::TapXdpProgram(std::string device, unsigned ifindex, const TapXdpOptions& options)
    : device_(std::move(device)), ifindex_(ifindex), file_(find_xdp_object(options.program.file)) {
    route_libbpf_log();
    open_object();
    bpf_program* program = select_program(options.program.section);
    // Checked before the load, so that a wrong file fails without privileges.
    bpf_map* redirect_map = options.redirect_ifindex ? find_redirect_map() : nullptr;
    load(program);
    if (redirect_map != nullptr) {
        fill_redirect_map(redirect_map, *options.redirect_ifindex);
    }
    attach(options.mode);
}

TapXdpProgram::~TapXdpProgram() {
    detach();
}

std::string TapXdpProgram::what_program() const {
    std::string s = "XDP program '" + file_ + "'";
    if (!section_.empty()) {
        s += " section '" + section_ + "'";
    }
    return s;
}

void TapXdpProgram::open_object() {
    bpf_object* object = bpf_object__open_file(file_.c_str(), nullptr);
    if (object == nullptr) {
        int err = errno;
        throw_libbpf_error(device_, what_program() + ": open", err, open_hint(err));
    }
    object_.reset(object);
}

bpf_program* TapXdpProgram::select_program(const std::string& wanted_section) {
    // A section name ("xdp", "xdp/foo") or, since every shipped program sits
    // in "xdp", a function name.
    bpf_program* chosen = nullptr;
    bpf_program* p = nullptr;
    bpf_object__for_each_program(p, object_.get()) {
        bool match = wanted_section.empty() ? bpf_program__type(p) == BPF_PROG_TYPE_XDP
                                            : wanted_section == bpf_program__section_name(p);
        if (match) {
            chosen = p;
            break;
        }
    }
    if (chosen == nullptr && !wanted_section.empty()) {
        chosen = bpf_object__find_program_by_name(object_.get(), wanted_section.c_str());
    }
    if (chosen == nullptr) {
        std::string wanted = wanted_section.empty()
                                 ? std::string("no XDP program")
                                 : "no program in section (or named) '" + wanted_section + "'";
        throw_option_error(device_, "XDP program '" + file_ + "' has " + wanted + " (it has " +
                                        list_programs(object_.get()) + ")");
    }
    section_ = bpf_program__section_name(chosen);
    program_name_ = bpf_program__name(chosen);
    if (bpf_program__type(chosen) != BPF_PROG_TYPE_XDP) {
        throw_option_error(device_, what_program() + " is not an XDP program (use SEC(\"xdp\"))");
    }
    // Only the chosen program is loaded: another one in the object that this
    // kernel rejects must not stop it.
    bpf_object__for_each_program(p, object_.get()) {
        bpf_program__set_autoload(p, p == chosen);
    }
    return chosen;
}

void TapXdpProgram::load(bpf_program* program) {
    int err = bpf_object__load(object_.get());
    if (err != 0) {
        throw_libbpf_error(device_, what_program() + ": load", err,
                           std::abs(err) == EPERM
                               ? std::string_view(kRootHint)
                               : "the verifier refused it or the kernel lacks something it "
                                 "uses; --log-level debug shows libbpf's log");
    }
    program_fd_ = bpf_program__fd(program);
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    err = bpf_obj_get_info_by_fd(program_fd_, &info, &len);
    if (err != 0) {
        throw_libbpf_error(device_, what_program() + ": BPF_OBJ_GET_INFO_BY_FD", err, kRootHint);
    }
    program_id_ = info.id;
}

bpf_map* TapXdpProgram::find_redirect_map() {
    bpf_map* map = bpf_object__find_map_by_name(object_.get(), kXdpRedirectMapName);
    if (map == nullptr || bpf_map__type(map) != BPF_MAP_TYPE_DEVMAP) {
        throw_option_error(device_, "xdp_redirect: " + what_program() + " has no devmap named '" +
                                        kXdpRedirectMapName +
                                        "' (the shipped xdp_redirect.bpf.o has one)");
    }
    return map;
}

void TapXdpProgram::fill_redirect_map(bpf_map* map, unsigned target_ifindex) {
    uint32_t key = 0;
    uint32_t value = target_ifindex;
    int err = bpf_map_update_elem(bpf_map__fd(map), &key, &value, BPF_ANY);
    if (err != 0) {
        // EINVAL/ENODEV here: the kernel could not take that device as a
        // redirect target.
        throw_libbpf_error(device_,
                           "xdp_redirect: " + what_program() + ": " + kXdpRedirectMapName +
                               "[0] = ifindex " + std::to_string(target_ifindex),
                           errno, "the target must be a device that accepts XDP redirects");
    }
    redirect_ifindex_ = target_ifindex;
}

bool TapXdpProgram::try_attach(XdpMode mode, int* error) {
    int err = bpf_xdp_attach(static_cast<int>(ifindex_), program_fd_,
                             mode_flag(mode) | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
    *error = std::abs(err);
    return err == 0;
}

void TapXdpProgram::attach(XdpMode wanted) {
    int err = 0;
    XdpMode first = wanted == XdpMode::generic ? XdpMode::generic : XdpMode::native;
    if (try_attach(first, &err)) {
        mode_ = first;
        return;
    }
    // A program already there (EBUSY, EEXIST for one in the other mode) is
    // not ours to work around.
    bool fall_back = wanted == XdpMode::auto_select && err != EBUSY && err != EEXIST;
    if (!fall_back) {
        throw_libbpf_error(device_, what_program() + ": attach (" + to_string(first) + " mode)",
                           err, attach_hint(err));
    }
    int native_err = err;
    if (try_attach(XdpMode::generic, &err)) {
        make_logger("xdp")->warn("{}: native XDP refused ({}); {} runs in generic mode", device_,
                                 libbpf_error_text(native_err), what_program());
        mode_ = XdpMode::generic;
        return;
    }
    throw_libbpf_error(device_,
                       what_program() + ": attach (native: " + libbpf_error_text(native_err) +
                           "; then generic mode)",
                       err, attach_hint(err));
}

void TapXdpProgram::detach() noexcept {
    try {
        Logger log = make_logger("xdp");
        uint32_t attached = 0;
        int err = bpf_xdp_query_id(static_cast<int>(ifindex_), static_cast<int>(mode_flag(mode_)),
                                   &attached);
        if (err != 0) {
            // The tap is gone (or moved to another namespace): so is the program.
            log->debug("{}: XDP program id {} not detached: query of ifindex {}: {}", device_,
                       program_id_, ifindex_, libbpf_error_text(err));
            return;
        }
        if (attached != program_id_) {
            log->info(
                "{}: XDP program id {} is no longer attached (the device runs id {}): left "
                "alone",
                device_, program_id_, attached);
            return;
        }
        // old_prog_fd makes the kernel check again, atomically, that ours is
        // the program being removed (XDP_FLAGS_REPLACE).
        // (What LIBBPF_OPTS does, without its GNU statement expression,
        // which clang's -Wpedantic rejects.)
        bpf_xdp_attach_opts opts{};
        opts.sz = sizeof(opts);
        opts.old_prog_fd = program_fd_;
        err = bpf_xdp_detach(static_cast<int>(ifindex_), mode_flag(mode_), &opts);
        if (err != 0) {
            log->warn("{}: detaching XDP program id {}: {}", device_, program_id_,
                      libbpf_error_text(err));
        }
    } catch (...) {
        // A destructor: logging must not throw out of it.
    }
}

}  // namespace vnet::ports
