// The factory entry for tap ports: TapPortOptions from the [[port]] keys,
// then the XDP program, attached right after the tap is opened, before any
// worker writes to it, so it sees every frame vnetd sends (docs/USAGE.md
// "XDP on the tap").
#include <nlohmann/json.hpp>

#include "control/ports/port_factory.hpp"
#include "ports/tap/tap_port.hpp"

namespace vnet::control {

namespace {

std::unique_ptr<ports::TapXdpProgram> load_xdp(const PortConfig& pc, const TapSettings& ts,
                                               const ports::TapPort& tap, const Logger& log) {
    const std::string device = "tap '" + tap.device().name() + "'";
    ports::TapXdpOptions o;
    o.program = ports::split_xdp_spec(ts.xdp);
    o.mode = ports::parse_xdp_mode(ts.xdp_mode).value_or(ports::XdpMode::auto_select);
    if (!ts.xdp_redirect.empty()) {
        o.redirect_ifindex = ports::xdp_redirect_target(device, ts.xdp_redirect);
    }
    auto xdp = std::make_unique<ports::TapXdpProgram>(device, tap.device().ifindex(), o);
    log->info("port {}: xdp program {} section {} from {} on tap {}: {} mode (id {}){}", pc.name,
              xdp->program_name(), xdp->section(), xdp->file(), tap.device().name(),
              ports::to_string(xdp->mode()), xdp->program_id(),
              ts.xdp_redirect.empty() ? "" : ", redirect to " + ts.xdp_redirect);
    return xdp;
}

}  // namespace

BuiltPort build_tap_port(const PortConfig& pc, const PortContext& context) {
    const TapSettings& ts = std::get<TapSettings>(pc.settings);
    ports::TapPortOptions o;
    o.tap.name = tap_device_name(pc);
    o.tap.persist = ts.persist;
    o.tap.napi = ts.napi;
    o.tap.napi_frags = ts.napi_frags;
    o.tap.txqueuelen = ts.txqueuelen;
    if (pc.mtu) {
        o.tap.mtu = *pc.mtu;
    }
    o.submit_mode = context.config.datapath.submit;
    o.queues = context.config.queue_pairs_of(pc);
    if (context.handed_over != nullptr) {
        for (UniqueFd& fd : *context.handed_over) {
            o.handed_over_fds.push_back(fd.release());  // TapPort owns them from here
        }
    }
    auto tap = std::make_unique<ports::TapPort>(pc.name, o);
    context.log->info("port {}: tap {} (ifindex {}, {} queue(s), napi {}, submit {})", pc.name,
                      tap->device().name(), tap->device().ifindex(), tap->queue_count(),
                      tap->device().napi(), io::to_string(tap->submit_mode()));
    if (!ts.xdp.empty()) {
        tap->attach_xdp(load_xdp(pc, ts, *tap, context.log));
    }
    // The one line for a tap deleted under vnetd: the worker that noticed
    // only posts it, the control thread logs it.
    tap->set_gone_handler([&queue = context.control_queue, log = context.log,
                           name = pc.name](const std::string& what) {
        queue.post([log, name, what] {
            log->error(
                "port {}: the tap device is gone ({}; deleted, or its network namespace "
                "was): its packets are dropped as device_gone until the port is removed",
                name, what);
        });
    });
    return {std::move(tap), nullptr};
}

void tap_list_fields(const PortConfig& pc, nlohmann::json& out) {
    out["ifname"] = tap_device_name(pc);
}

std::string tap_handover_key(const PortConfig& pc) {
    return tap_device_name(pc);
}

// Not with an XDP program: the new vnetd would attach its own while ours
// is still there (XDP_FLAGS_UPDATE_IF_NOEXIST), so the hand-over is refused
// before anything starts.
std::vector<int> tap_handover_fds(ports::Port& port, PortService*) {
    auto& tap = dynamic_cast<ports::TapPort&>(port);
    if (tap.xdp() != nullptr) {
        throw std::invalid_argument("port '" + port.name() +
                                    "': a tap with an XDP program is not handed over; restart "
                                    "vnetd instead");
    }
    return tap.queue_fds();
}

}  // namespace vnet::control
