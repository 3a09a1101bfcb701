// vnet-pktgen: a virtio-net front end over vhost-user, standing in for a VM.
// It brings a device up the way QEMU or DPDK virtio-user would, then sends
// (--tx, like testpmd txonly), receives and verifies (--rx, like testpmd
// rxonly) or sends every frame back (--reflect, a latency test's far end),
// and prints stats a script can parse.
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <memory>

#include "final_report.hpp"
#include "frontend/frontend_session.hpp"
#include "frontend/net_driver.hpp"
#include "frontend/packet_builder.hpp"
#include "pktgen_options.hpp"
#include "reflector.hpp"
#include "run_control.hpp"
#include "rx_receiver.hpp"
#include "tx_generator.hpp"

namespace vnet::pktgen {
namespace {

using virtio::Feature;
using virtio::FeatureSet;

frontend::NetDriverConfig driver_config(const PktgenOptions& o) {
    frontend::NetDriverConfig c;
    c.queue_size = o.queue_size;
    c.packed = o.packed;
    // MTU: the device's MTU is reported (read with GET_CONFIG).
    FeatureSet wanted{Feature::version_1, Feature::net_mtu};
    c.wanted_protocol_features =
        c.wanted_protocol_features.with(vhost_user::ProtocolFeature::config);
    if (o.event_idx) {
        wanted = wanted.with(Feature::ring_event_idx);
    }
    if (o.mrg_rxbuf) {
        wanted = wanted.with(Feature::net_mrg_rxbuf);
    }
    if (o.gso) {
        // TX: we hand over partial checksums and TSO frames (CSUM, HOST_TSO4);
        // RX: we take them whole (GUEST_CSUM, GUEST_TSO4).
        const FeatureSet gso = o.direction == Direction::tx
                                   ? FeatureSet{Feature::net_csum, Feature::net_host_tso4}
                                   : FeatureSet{Feature::net_guest_csum, Feature::net_guest_tso4};
        wanted = wanted | gso;
        c.required_features = c.required_features | gso;
    }
    c.wanted_features = wanted;
    if (o.reconnect) {
        c.wanted_protocol_features =
            c.wanted_protocol_features.with(vhost_user::ProtocolFeature::inflight_shmfd);
    }
    c.tx_slot_bytes = static_cast<uint32_t>(frontend::PacketBuilder::kNetHeaderLen) + o.size_max;
    if (o.gso && o.direction == Direction::rx && !o.mrg_rxbuf) {
        // Without mergeable buffers a whole 64 KiB frame must fit in one.
        c.rx_buffer_bytes = static_cast<uint32_t>(frontend::PacketBuilder::kNetHeaderLen) +
                            frontend::kMaxGsoFrameLen;
    }
    return c;
}

frontend::FrontendSession open_session(const PktgenOptions& o) {
    const auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.connect_timeout_s * 1000));
    if (o.server) {
        std::fprintf(stderr, "vnet-pktgen: waiting for a back end on %s\n", o.socket_path.c_str());
        return frontend::FrontendSession::accept(o.socket_path, timeout);
    }
    return frontend::FrontendSession::connect(o.socket_path, timeout);
}

void report_link_up(const PktgenOptions& o, const frontend::NetDriver& d) {
    std::fprintf(stderr,
                 "vnet-pktgen: link up on %s: features offered 0x%" PRIx64 " negotiated 0x%" PRIx64
                 " protocol 0x%" PRIx64 ", %s rings of %u, mrg_rxbuf %s, event_idx %s, mtu %s\n",
                 o.socket_path.c_str(), d.offered_features().bits(), d.negotiated_features().bits(),
                 d.negotiated_protocol_features().bits(), d.packed() ? "packed" : "split",
                 o.queue_size, d.mrg_rxbuf() ? "on" : "off",
                 d.negotiated_features().has(Feature::ring_event_idx) ? "on" : "off",
                 d.mtu() ? std::to_string(*d.mtu()).c_str() : "none");
}

// The whole run over one ring type: chosen once, so the loops are
// compiled for it and never dispatch per packet or per burst.
template <frontend::DriverRing Ring>
void run_traffic(frontend::NetDriver& device, const PktgenOptions& o, FinalReport& report) {
    const Clock::time_point start = Clock::now();
    if (o.direction == Direction::tx) {
        auto reconnect = [&device, &o] {
            if (!o.reconnect) {
                return false;
            }
            device.reconnect(open_session(o));
            return true;
        };
        TxGenerator<Ring> generator(device, o, reconnect);
        const TxCounters c = generator.run();
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        report.add_rates("tx", c.packets, c.bytes, seconds);
        report.add_counters(c, kTxCounterTable);
    } else if (o.direction == Direction::reflect) {
        Reflector<Ring> reflector(device, o);
        const ReflectCounters c = reflector.run();
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        report.add_rates("reflect", c.packets, c.bytes, seconds);
        report.add_counters(c, kReflectCounterTable);
    } else {
        RxReceiver<Ring> receiver(device, o);
        const RxCounters c = receiver.run();
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        report.add_rates("rx", c.packets, c.bytes, seconds);
        report.add_counters(c, kRxCounterTable);
    }
}

int run(const PktgenOptions& o) {
    frontend::NetDriver device(open_session(o), driver_config(o));
    report_link_up(o, device);

    FinalReport report;
    if (device.packed()) {
        run_traffic<frontend::DriverPackedRing>(device, o, report);
    } else {
        run_traffic<frontend::DriverSplitRing>(device, o, report);
    }
    report.add("ring-format", std::string(device.packed() ? "packed" : "split"));
    report.add("negotiated-features", device.negotiated_features().bits());
    // The MTU the back end offered (VIRTIO_NET_F_MTU), or "none".
    if (device.mtu()) {
        report.add("mtu", uint64_t{*device.mtu()});
    } else {
        report.add("mtu", std::string("none"));
    }
    if (!device.stop()) {
        std::fprintf(stderr, "vnet-pktgen: back end did not answer the stop requests\n");
    }
    report.print(o.json);
    return 0;
}

}  // namespace
}  // namespace vnet::pktgen

int main(int argc, char** argv) {
    const vnet::pktgen::PktgenOptions options = vnet::pktgen::parse_options(argc, argv);
    vnet::pktgen::install_stop_signals();
    try {
        return vnet::pktgen::run(options);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vnet-pktgen: %s\n", e.what());
        return 1;
    }
}
