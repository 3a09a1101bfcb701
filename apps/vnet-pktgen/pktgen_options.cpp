#include "pktgen_options.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "common/build_info.hpp"
#include "common/cli_exit.hpp"
#include "frontend/packet_builder.hpp"

namespace vnet::pktgen {
namespace {

bool parse_mac(const std::string& text, frontend::MacAddress& out) {
    unsigned b[6];
    char tail;
    if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                    &tail) != 6) {
        return false;
    }
    for (int i = 0; i < 6; ++i) {
        if (b[i] > 0xff) {
            return false;
        }
        out[i] = static_cast<uint8_t>(b[i]);
    }
    return true;
}

bool parse_range(const std::string& text, uint32_t& lo, uint32_t& hi) {
    unsigned a, b;
    char tail;
    if (std::sscanf(text.c_str(), "%u-%u%c", &a, &b, &tail) != 2 || a > b) {
        return false;
    }
    lo = a;
    hi = b;
    return true;
}

bool parse_on_off(const std::string& text) {
    return text == "on";
}

}  // namespace

PktgenOptions parse_options(int argc, char** argv) {
    PktgenOptions o;
    CLI::App app{
        "vnet-pktgen: a virtio-net front end over vhost-user that sends (txonly) or "
        "receives and verifies (rxonly) traffic"};
    app.set_version_flag("--version", build_info::version_line("vnet-pktgen"));
    bool tx = false;
    bool rx = false;
    bool reflect = false;
    uint32_t size = 0;
    std::string size_range, src_mac, dst_mac;
    std::string mrg = "on", event_idx = "on";
    uint32_t queue_size = o.queue_size;

    app.add_option("--socket-path", o.socket_path, "vhost-user socket")->required();
    app.add_flag("--server", o.server, "listen on the socket; the back end connects to us");
    auto* tx_flag = app.add_flag("--tx", tx, "send frames (like testpmd txonly)");
    auto* rx_flag = app.add_flag("--rx", rx, "receive and verify frames (like testpmd rxonly)");
    auto* reflect_flag = app.add_flag(
        "--reflect", reflect,
        "send every received frame back with its MACs (and IPv4 addresses, UDP ports) swapped: "
        "the far end of a latency measurement");
    tx_flag->excludes(rx_flag);
    reflect_flag->excludes(tx_flag)->excludes(rx_flag);
    app.add_option("--count", o.count, "stop after N packets (0 = no limit)");
    app.add_option("--duration", o.duration_s, "stop after S seconds (0 = no limit)")
        ->check(CLI::NonNegativeNumber);
    auto* size_opt = app.add_option("--size", size, "frame bytes without FCS");
    auto* range_opt = app.add_option("--size-range", size_range, "random frame sizes MIN-MAX");
    size_opt->excludes(range_opt);
    app.add_option("--burst", o.burst, "descriptors per avail publish")
        ->check(CLI::Range(1, 32768));
    app.add_option("--rate", o.rate_pps, "packets per second (0 = unpaced)");
    app.add_flag("--gso", o.gso, "send TCP/IPv4 frames with GSO TCPV4 (needs CSUM + HOST_TSO4)");
    app.add_option("--mss", o.mss, "GSO segment size")->check(CLI::Range(64, 9000));
    app.add_option("--queue-size", queue_size,
                   "descriptors per ring (split: a power of two; packed: any)")
        ->check(CLI::Range(1, 32768));
    app.add_flag("--packed", o.packed,
                 "packed rings (virtio 1.2 2.8): negotiate VIRTIO_F_RING_PACKED, bit 34; "
                 "fails if the back end does not offer it");
    app.add_option("--mrg-rxbuf", mrg, "negotiate VIRTIO_NET_F_MRG_RXBUF")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--event-idx", event_idx, "negotiate VIRTIO_RING_F_EVENT_IDX")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--src-mac", src_mac, "source MAC (default 02:00:00:00:00:01)");
    app.add_option("--src-mac-count", o.src_mac_count,
                   "TX: cycle the source MAC through N addresses (its last two bytes count up)")
        ->check(CLI::Range(1, 65536));
    app.add_option("--dst-mac", dst_mac, "destination MAC (default 02:00:00:00:00:02)");
    app.add_flag("--json", o.json, "also print the final stats as one JSON object");
    app.add_option("--stats-interval", o.stats_interval_s, "seconds between stats lines (0 = off)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--connect-timeout", o.connect_timeout_s, "seconds to wait for the back end")
        ->check(CLI::PositiveNumber);
    app.add_option("--drain-timeout", o.drain_timeout_s,
                   "TX: seconds to wait for the back end to consume what was sent")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--reconnect", o.reconnect,
                 "TX: when the back end hangs up, connect again and resume (INFLIGHT_SHMFD)");
    app.add_option("--busy-poll-us", o.busy_poll_us,
                   "spin this long on an idle ring before sleeping on its call eventfd");
    app.add_option("--seed", o.seed, "random seed for --size-range");

    try {
        app.parse(argc, argv);
        if (int{tx} + int{rx} + int{reflect} != 1) {
            throw CLI::ValidationError("exactly one of --tx, --rx and --reflect is required");
        }
        o.direction = tx ? Direction::tx : (rx ? Direction::rx : Direction::reflect);
        if (reflect && o.gso) {
            throw CLI::ValidationError("--reflect sends back what it receives: no --gso");
        }
        // A reflected frame is one buffer, sent back as it is.
        o.mrg_rxbuf = parse_on_off(mrg) && !reflect;
        o.event_idx = parse_on_off(event_idx);
        if (!o.packed && (queue_size & (queue_size - 1)) != 0) {
            throw CLI::ValidationError(
                "--queue-size must be a power of two (any size with --packed)");
        }
        o.queue_size = static_cast<uint16_t>(queue_size);
        if (!src_mac.empty() && !parse_mac(src_mac, o.src_mac)) {
            throw CLI::ValidationError("--src-mac: expected aa:bb:cc:dd:ee:ff");
        }
        if (!dst_mac.empty() && !parse_mac(dst_mac, o.dst_mac)) {
            throw CLI::ValidationError("--dst-mac: expected aa:bb:cc:dd:ee:ff");
        }
        const frontend::PacketBuilder shape(
            {}, o.gso ? frontend::FrameKind::tcp_gso : frontend::FrameKind::udp);
        if (!size_range.empty()) {
            if (!parse_range(size_range, o.size_min, o.size_max)) {
                throw CLI::ValidationError("--size-range: expected MIN-MAX with MIN <= MAX");
            }
        } else {
            // A GSO run is about big frames: default to a 16 KiB super-frame.
            o.size_min = o.size_max = size != 0 ? size : (o.gso ? 16384 : 64);
        }
        if (o.size_min < shape.min_frame_len() || o.size_max > shape.max_frame_len()) {
            throw CLI::ValidationError("frame sizes must be within " +
                                       std::to_string(shape.min_frame_len()) + ".." +
                                       std::to_string(shape.max_frame_len()) +
                                       (o.gso ? " with --gso" : " (use --gso for more)"));
        }
        if (o.burst > o.queue_size) {
            o.burst = o.queue_size;
        }
    } catch (const CLI::ParseError& e) {
        std::exit(exit_status_of(app, e));
    }
    return o;
}

}  // namespace vnet::pktgen
