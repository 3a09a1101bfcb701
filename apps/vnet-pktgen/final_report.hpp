// The end-of-run report on stdout: one "name: value" line per item (the
// lines scripts grep, e.g. "tx-packets: N"), and with --json the same items
// as one JSON object on a last line.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "run_counters.hpp"

namespace vnet::pktgen {

struct ReportItem {
    std::string name;
    std::variant<uint64_t, double, std::string> value;
};

class FinalReport {
public:
    void add(std::string name, uint64_t v) { items_.push_back({std::move(name), v}); }
    void add(std::string name, double v) { items_.push_back({std::move(name), v}); }
    void add(std::string name, std::string v) { items_.push_back({std::move(name), std::move(v)}); }

    template <class Counters, size_t N>
    void add_counters(const Counters& c, const std::array<CounterField<Counters>, N>& table) {
        for (const CounterField<Counters>& f : table) {
            add(f.name, c.*(f.member));
        }
    }

    // Adds "<prefix>-pps", "<prefix>-gbps" (frame bytes, no FCS or preamble)
    // and "duration-s".
    void add_rates(const std::string& prefix, uint64_t packets, uint64_t bytes, double seconds);

    void print(bool json) const;

private:
    std::vector<ReportItem> items_;
};

}  // namespace vnet::pktgen
