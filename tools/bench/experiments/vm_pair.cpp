#include "experiments/vm_pair.hpp"

#include "harness/interrupt.hpp"

namespace vnet::bench {

RateWindow point_window(const BenchContext& ctx) {
    RateWindow w;
    w.warmup_s = ctx.warmup_seconds();
    w.window_s = ctx.point_seconds();
    return w;
}

std::unique_ptr<PktgenGuest> start_silent_guest(BenchContext& ctx, SwitchSystem& system, int port,
                                                const std::string& label) {
    PktgenGuestSpec g;
    g.label = label;
    g.socket_path = system.socket_path(port);
    g.transmit = false;
    g.server = system.guests_listen();
    g.cpu = ctx.load_cpu();
    auto guest = std::make_unique<PktgenGuest>(ctx, g);
    guest->wait_for_link();
    return guest;
}

VmPair::VmPair(BenchContext& ctx, SwitchSystem& system, const std::string& label,
               const VmPairSpec& spec)
    : ctx_(ctx), system_(system) {
    if (system.learns()) {
        announce_mac(ctx, system.socket_path(spec.to), guest_mac(spec.to));
    }
    PktgenGuestSpec rx;
    rx.label = label + "-rx";
    rx.socket_path = system.socket_path(spec.to);
    rx.transmit = false;
    rx.server = system.guests_listen();
    rx.cpu = spec.receiver_cpu;
    if (spec.receiver_gso) {
        rx.extra_args.push_back("--gso");
    }
    rx.queue_size = spec.queue_size;
    receiver_ = std::make_unique<PktgenGuest>(ctx, rx);
    receiver_->wait_for_link();

    PktgenGuestSpec tx;
    tx.label = label + "-tx";
    tx.socket_path = system.socket_path(spec.from);
    tx.transmit = true;
    tx.server = system.guests_listen();
    tx.cpu = spec.sender_cpu;
    tx.idle_priority = spec.sender_idle;
    tx.frame_bytes = spec.frame_bytes;
    tx.gso = spec.gso;
    tx.src_mac = spec.src_mac.empty() ? guest_mac(spec.from) : spec.src_mac;
    tx.dst_mac = guest_mac(spec.to);
    tx.src_mac_count = spec.src_mac_count;
    tx.rate_pps = spec.rate_pps;
    tx.queue_size = spec.queue_size;
    sender_ = std::make_unique<PktgenGuest>(ctx, tx);
    sender_->wait_for_link();
}

std::string VmPair::failure() {
    for (const std::string& why : {system_.failure(), sender_->failure(), receiver_->failure()}) {
        if (!why.empty()) {
            return why;
        }
    }
    return "";
}

double VmPair::receive_rate(bool bytes) {
    return measure_sampled_rate(
        [&] { return bytes ? receiver_->byte_sample() : receiver_->packet_sample(); },
        point_window(ctx_), [&] { return failure(); });
}

VmPairTotals VmPair::finish() {
    VmPairTotals t;
    t.sender = sender_->finish();
    sleep_for(0.2);  // what is still in the switch reaches the receiver
    t.receiver = receiver_->finish();
    if (t.sender.is_object()) {
        t.sent = t.sender.value("tx-packets", uint64_t{0});
    }
    if (t.receiver.is_object()) {
        t.received = t.receiver.value("rx-packets", uint64_t{0});
    }
    if (t.sent != 0 && t.received <= t.sent) {
        t.loss_pct = 100.0 * static_cast<double>(t.sent - t.received) / static_cast<double>(t.sent);
    }
    return t;
}

}  // namespace vnet::bench
