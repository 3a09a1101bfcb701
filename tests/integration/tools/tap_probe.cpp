// tap_probe: drives TapDevice, BatchWriter and read_burst against a real tap
// for tests/integration/test_tap_device.sh and test_tap_xdp.sh. (Timing the
// same calls is tools/bench/micro/tap_io_bench.)
//
//   tap_probe features            prints what TUNGETFEATURES offers
//   tap_probe serve --name N ...  opens the tap, prints one "ready ..." line,
//                                 then runs one command per stdin line and
//                                 answers with lines ending in "ok ..." or
//                                 "error ...":
//     info
//     offloads <guest features, comma separated, or none>
//     write <io_uring|writev> <count> <frame bytes> <tag>
//     read <count> <timeout ms>            prints "frame <hex>" per test frame
//     persist <0|1>
//     quit
//
// Test frames (also built by tap_frames.py): broadcast destination, source
// 02:76:6e:00:00:<tag>, ethertype 0x88b5 (IEEE local experimental, so the
// stack ignores them), payload tag, index (32-bit big-endian), then byte j
// = (tag*7 + index*13 + j) & 0xff.
#include <linux/if_tun.h>
#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "io/batch_reader.hpp"
#include "io/batch_writer.hpp"
#include "ports/setup_error.hpp"
#include "ports/tap/tap_device.hpp"
#include "ports/tap/tap_offloads.hpp"
#include "virtio/net_header.hpp"

namespace {

using namespace vnet;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kTestEthertype = 0x88b5;
constexpr size_t kEthHeader = 14;

std::vector<uint8_t> test_frame(unsigned tag, uint32_t index, size_t size) {
    std::vector<uint8_t> f(std::max(size, kEthHeader + 5));
    for (size_t b = 0; b < 6; ++b) {
        f[b] = 0xff;
    }
    const uint8_t src[6] = {0x02, 0x76, 0x6e, 0x00, 0x00, static_cast<uint8_t>(tag)};
    std::copy(src, src + 6, f.begin() + 6);
    f[12] = kTestEthertype >> 8;
    f[13] = kTestEthertype & 0xff;
    f[14] = static_cast<uint8_t>(tag);
    f[15] = static_cast<uint8_t>(index >> 24);
    f[16] = static_cast<uint8_t>(index >> 16);
    f[17] = static_cast<uint8_t>(index >> 8);
    f[18] = static_cast<uint8_t>(index);
    for (size_t j = 19; j < f.size(); ++j) {
        f[j] = static_cast<uint8_t>(tag * 7 + index * 13 + (j - 19));
    }
    return f;
}

std::string hex(const uint8_t* p, size_t n) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(2 * n, '0');
    for (size_t i = 0; i < n; ++i) {
        out[2 * i] = kDigits[p[i] >> 4];
        out[2 * i + 1] = kDigits[p[i] & 0xf];
    }
    return out;
}

std::optional<virtio::FeatureSet> parse_guest_features(const std::string& list) {
    using virtio::Feature;
    static const std::pair<const char*, Feature> kNames[] = {
        {"guest_csum", Feature::net_guest_csum}, {"guest_tso4", Feature::net_guest_tso4},
        {"guest_tso6", Feature::net_guest_tso6}, {"guest_ecn", Feature::net_guest_ecn},
        {"guest_ufo", Feature::net_guest_ufo},   {"guest_uso4", Feature::net_guest_uso4},
        {"guest_uso6", Feature::net_guest_uso6},
    };
    virtio::FeatureSet set;
    if (list == "none") {
        return set;
    }
    std::stringstream in(list);
    std::string item;
    while (std::getline(in, item, ',')) {
        bool known = false;
        for (const auto& [name, feature] : kNames) {
            if (item == name) {
                set = set.with(feature);
                known = true;
            }
        }
        if (!known) {
            return std::nullopt;
        }
    }
    return set;
}

// Batches of test frames: one vnet header (all zero: no offload) shared by
// every packet, frames built once.
struct FrameBatch {
    virtio::NetHeader header{};
    std::vector<std::vector<uint8_t>> frames;
    packet::PacketBurst burst;  // frames [first, first + n) of the last fill()

    FrameBatch(unsigned tag, uint32_t first_index, size_t count, size_t frame_size)
        : frames(count) {
        for (size_t i = 0; i < count; ++i) {
            frames[i] = test_frame(tag, first_index + static_cast<uint32_t>(i), frame_size);
        }
    }

    // Makes `burst` carry frames [first, first + n), n <= kMaxBurstPackets.
    const packet::PacketBurst& fill(size_t first, size_t n) {
        burst.clear();
        for (size_t i = first; i < first + n; ++i) {
            std::span<iovec> iov = burst.free_iovecs();
            iov[0] = {&header, sizeof header};
            iov[1] = {frames[i].data(), frames[i].size()};
            burst.push(2, static_cast<uint32_t>(sizeof header + frames[i].size()),
                       static_cast<uint32_t>(i));
        }
        return burst;
    }
};

// Empty buffers of `size` bytes lent to a read, each behind a vnet header
// buffer when `headers` is given, as a guest's RX ring lends them.
struct ReadBuffers {
    std::vector<virtio::NetHeader> headers;
    std::vector<std::vector<uint8_t>> data;
    packet::PacketBurst burst;

    ReadBuffers(size_t count, size_t size, bool with_headers)
        : headers(with_headers ? count : 0), data(count, std::vector<uint8_t>(size)) {
        for (size_t i = 0; i < count; ++i) {
            std::span<iovec> iov = burst.free_iovecs();
            uint16_t n = 0;
            if (with_headers) {
                iov[n++] = {&headers[i], sizeof(virtio::NetHeader)};
            }
            iov[n++] = {data[i].data(), data[i].size()};
            burst.push(n, static_cast<uint32_t>(size), static_cast<uint32_t>(i));
        }
    }
};

class Session {
public:
    explicit Session(ports::TapDevice tap) : tap_(std::move(tap)) {}

    void info() {
        std::printf("name=%s ifindex=%u flags=%#x napi=%d napi_frags=%d created=%d\n",
                    tap_.name().c_str(), tap_.ifindex(), tap_.flags(), tap_.napi() ? 1 : 0,
                    (tap_.flags() & IFF_NAPI_FRAGS) != 0 ? 1 : 0, tap_.created() ? 1 : 0);
    }

    void offloads(const std::string& list) {
        auto features = parse_guest_features(list);
        if (!features) {
            std::printf("error unknown guest feature in '%s'\n", list.c_str());
            return;
        }
        const auto wanted = ports::tun_offloads_for_guest(*features);
        const auto applied = tap_.set_offloads(wanted);
        std::printf("ok wanted=%s applied=%s\n", ports::to_string(wanted).c_str(),
                    ports::to_string(applied).c_str());
    }

    // Writes `count` frames in batches of 64 (VHOST_NET_BATCH), keeping any
    // packet that would block and retrying it after POLLOUT.
    void write(io::BatchMode mode, size_t count, size_t frame_size, unsigned tag) {
        io::BatchWriter writer(mode, io::BatchWriter::kDefaultRingDepth, "tap_probe");
        writer.register_fd(tap_.fd());
        FrameBatch batch(tag, 0, count, frame_size);
        std::vector<int> results(count);
        size_t done = 0;
        size_t failed = 0;
        uint64_t bytes = 0;
        int first_error = 0;
        while (done < count) {
            const size_t n = std::min<size_t>(packet::kMaxBurstPackets, count - done);
            std::span<int> out(results.data() + done, n);
            const size_t finished = writer.submit(tap_.fd(), batch.fill(done, n), out);
            for (size_t i = 0; i < finished; ++i) {
                if (out[i] >= 0) {
                    bytes += static_cast<uint64_t>(out[i]);
                } else {
                    ++failed;
                    first_error = first_error != 0 ? first_error : out[i];
                }
            }
            done += finished;
            if (finished < n) {
                pollfd p{tap_.fd(), POLLOUT, 0};
                ::poll(&p, 1, 1000);
            }
        }
        writer.unregister_fd(tap_.fd());
        std::printf("ok mode=%s written=%zu failed=%zu first_error=%d bytes=%llu\n",
                    std::string(io::to_string(writer.mode())).c_str(), count - failed, failed,
                    first_error, static_cast<unsigned long long>(bytes));
    }

    // Reads until `count` test frames arrived or `timeout_ms` passed; other
    // frames (IPv6 neighbour discovery...) are read and skipped.
    void read(size_t count, int timeout_ms) {
        constexpr size_t kBurst = 64;
        constexpr size_t kBufferSize = 65535 + 4;  // a whole GSO frame + VLAN (§3.2)
        ReadBuffers buffers(kBurst, kBufferSize, /*with_headers=*/true);
        const std::vector<std::vector<uint8_t>>& data = buffers.data;
        std::vector<int> lengths(kBurst);
        const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
        size_t seen = 0;
        size_t other = 0;
        while (seen < count && Clock::now() < deadline) {
            const io::ReadBurst burst = io::read_burst(tap_.fd(), buffers.burst, lengths);
            for (size_t i = 0; i < burst.packets; ++i) {
                const size_t len = static_cast<size_t>(lengths[i]) - sizeof(virtio::NetHeader);
                const uint8_t* f = data[i].data();
                if (len >= kEthHeader && f[12] == (kTestEthertype >> 8) &&
                    f[13] == (kTestEthertype & 0xff)) {
                    std::printf("frame %s\n", hex(f, len).c_str());
                    ++seen;
                } else {
                    ++other;
                }
            }
            if (burst.stop == -EAGAIN) {
                pollfd p{tap_.fd(), POLLIN, 0};
                ::poll(&p, 1, 50);
            } else if (burst.stop != 0) {
                std::printf("error read: %s\n", std::strerror(-burst.stop));
                return;
            }
        }
        std::printf("ok read=%zu other=%zu\n", seen, other);
    }

    void persist(bool on) {
        tap_.set_persist(on);
        std::printf("ok persist=%d\n", on ? 1 : 0);
    }

private:
    ports::TapDevice tap_;
};

bool run_command(Session& session, const std::string& line) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") {
        return false;
    }
    if (cmd == "info") {
        std::printf("ok ");
        session.info();
    } else if (cmd == "offloads") {
        std::string list;
        in >> list;
        session.offloads(list);
    } else if (cmd == "write") {
        std::string mode_name;
        size_t count = 0, size = 64;
        unsigned tag = 0;
        in >> mode_name >> count >> size >> tag;
        if (const auto mode = io::parse_batch_mode(mode_name)) {
            session.write(*mode, count, size, tag);
        } else {
            std::printf("error unknown mode '%s'\n", mode_name.c_str());
        }
    } else if (cmd == "read") {
        size_t count = 0;
        int timeout_ms = 1000;
        in >> count >> timeout_ms;
        session.read(count, timeout_ms);
    } else if (cmd == "persist") {
        int on = 0;
        in >> on;
        session.persist(on != 0);
    } else if (!cmd.empty()) {
        std::printf("error unknown command '%s'\n", cmd.c_str());
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Drive a tap through vnetd's TapDevice and batched I/O"};
    app.require_subcommand(1);
    auto* features_cmd = app.add_subcommand("features", "print what TUNGETFEATURES offers");
    auto* serve_cmd = app.add_subcommand("serve", "open a tap and take commands on stdin");
    ports::TapOptions options;
    bool no_link_up = false;
    unsigned mtu = 0, txqueuelen = 0;
    serve_cmd->add_option("--name", options.name, "interface name")->required();
    serve_cmd->add_flag("--napi", options.napi, "IFF_NAPI");
    serve_cmd->add_flag("--napi-frags", options.napi_frags, "IFF_NAPI_FRAGS (with --napi)");
    serve_cmd->add_flag("--multi-queue", options.multi_queue, "IFF_MULTI_QUEUE");
    serve_cmd->add_flag("--persist", options.persist, "TUNSETPERSIST 1");
    serve_cmd->add_flag("--no-link-up", no_link_up, "leave the link down");
    serve_cmd->add_option("--mtu", mtu, "SIOCSIFMTU");
    serve_cmd->add_option("--txqueuelen", txqueuelen, "SIOCSIFTXQLEN");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);

    try {
        if (features_cmd->parsed()) {
            const unsigned f = ports::TapDevice::kernel_features();
            std::printf("flags=%#x napi=%d napi_frags=%d multi_queue=%d vnet_hdr=%d\n", f,
                        (f & IFF_NAPI) != 0, (f & IFF_NAPI_FRAGS) != 0, (f & IFF_MULTI_QUEUE) != 0,
                        (f & IFF_VNET_HDR) != 0);
            return 0;
        }
        options.link_up = !no_link_up;
        if (mtu != 0) {
            options.mtu = mtu;
        }
        if (txqueuelen != 0) {
            options.txqueuelen = txqueuelen;
        }
        ports::TapDevice tap(options);
        std::printf("ready mtu=%u txqueuelen=%u ", tap.mtu(), tap.txqueuelen());
        Session session(std::move(tap));
        session.info();
        std::string line;
        while (std::getline(std::cin, line)) {
            try {
                if (!run_command(session, line)) {
                    break;
                }
            } catch (const std::exception& e) {
                std::printf("error %s\n", e.what());
            }
        }
    } catch (const ports::PortSetupError& e) {
        std::fprintf(stderr, "tap_probe: %s\n", e.what());
        return 1;
    }
    return 0;
}
