#include "harness/pktgen_guest.hpp"

#include <chrono>
#include <fstream>
#include <regex>

#include "harness/interrupt.hpp"

namespace vnet::bench {
namespace {

// "[    2.100s] rx 591744 pkts 37871616 bytes 0.595 Mpps 0.304 Gbit/s ..."
const std::regex& totals_line() {
    static const std::regex re(R"(^\[ *([0-9.]+)s\] (rx|tx) ([0-9]+) pkts ([0-9]+) bytes)");
    return re;
}

}  // namespace

PktgenGuest::PktgenGuest(BenchContext& ctx, const PktgenGuestSpec& spec) : label_(spec.label) {
    log_path_ = ctx.log_path("pktgen-" + spec.label + ".log");
    ProcessSpec p;
    p.name = "vnet-pktgen " + spec.label;
    p.argv = {ctx.tools().pktgen,
              "--socket-path",
              spec.socket_path,
              spec.transmit ? "--tx" : "--rx",
              "--stats-interval",
              "0.1",
              "--connect-timeout",
              "30",
              "--json"};
    if (spec.transmit) {
        p.argv.insert(p.argv.end(),
                      {"--size", std::to_string(spec.frame_bytes), "--src-mac", spec.src_mac,
                       "--dst-mac", spec.dst_mac, "--drain-timeout", "1"});
        if (spec.gso) {
            p.argv.push_back("--gso");
        }
        if (spec.src_mac_count > 1) {
            p.argv.insert(p.argv.end(), {"--src-mac-count", std::to_string(spec.src_mac_count)});
        }
        if (spec.rate_pps != 0) {
            p.argv.insert(p.argv.end(), {"--rate", std::to_string(spec.rate_pps)});
        }
    }
    if (spec.server) {
        p.argv.push_back("--server");
    }
    if (spec.queue_size != 0) {
        p.argv.insert(p.argv.end(), {"--queue-size", std::to_string(spec.queue_size)});
    }
    p.argv.insert(p.argv.end(), spec.extra_args.begin(), spec.extra_args.end());
    p.cpu = spec.cpu;
    p.idle_priority = spec.idle_priority;
    p.output_path = log_path_;
    process_ = ChildProcess(p);
}

PktgenGuest::~PktgenGuest() {
    process_.stop(SIGINT, 5);
}

void PktgenGuest::wait_for_link(double timeout_s) {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    while (first_match_in(log_path_, "link up").empty()) {
        if (std::string why = failure(); !why.empty()) {
            throw MeasureError(why);
        }
        if (Clock::now() > end) {
            throw MeasureError("vnet-pktgen " + label_ +
                               " got no link: " + last_line_of(log_path_));
        }
        sleep_for(0.02);
    }
}

GuestTotals PktgenGuest::totals() const {
    std::ifstream in(log_path_);
    GuestTotals last;
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, totals_line())) {
            last.at_s = std::stod(m[1].str());
            last.packets = std::stoull(m[3].str());
            last.bytes = std::stoull(m[4].str());
        }
    }
    return last;
}

CounterSample PktgenGuest::packet_sample() const {
    const GuestTotals t = totals();
    return {t.packets, t.at_s};
}

CounterSample PktgenGuest::byte_sample() const {
    const GuestTotals t = totals();
    return {t.bytes, t.at_s};
}

std::string PktgenGuest::failure() {
    if (process_.running()) {
        return "";
    }
    return "vnet-pktgen " + label_ + " exited: " + last_line_of(log_path_);
}

nlohmann::json PktgenGuest::finish() {
    process_.stop(SIGINT, 5);
    std::ifstream in(log_path_);
    std::string line;
    nlohmann::json report;
    while (std::getline(in, line)) {
        if (!line.empty() && line.front() == '{') {
            report = nlohmann::json::parse(line, nullptr, false);
        }
    }
    return report.is_discarded() ? nlohmann::json() : report;
}

void announce_mac(BenchContext& ctx, const std::string& socket_path, const std::string& mac) {
    ProcessSpec p;
    p.name = "vnet-pktgen announce " + mac;
    p.argv = {ctx.tools().pktgen,  "--socket-path",
              socket_path,         "--tx",
              "--count",           "1",
              "--src-mac",         mac,
              "--dst-mac",         "ff:ff:ff:ff:ff:ff",
              "--stats-interval",  "0",
              "--connect-timeout", "20"};
    p.cpu = ctx.load_cpu();
    run_checked(p, 30);
}

}  // namespace vnet::bench
