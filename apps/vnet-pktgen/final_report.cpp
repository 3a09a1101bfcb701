#include "final_report.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace vnet::pktgen {

void FinalReport::add_rates(const std::string& prefix, uint64_t packets, uint64_t bytes,
                            double seconds) {
    const double pps = seconds > 0 ? static_cast<double>(packets) / seconds : 0;
    const double gbps = seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0;
    add(prefix + "-pps", pps);
    add(prefix + "-gbps", gbps);
    add("duration-s", seconds);
}

void FinalReport::print(bool json) const {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const ReportItem& item : items_) {
        std::visit(
            [&](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, uint64_t>) {
                    std::printf("%s: %llu\n", item.name.c_str(),
                                static_cast<unsigned long long>(v));
                } else if constexpr (std::is_same_v<T, double>) {
                    std::printf("%s: %.3f\n", item.name.c_str(), v);
                } else {
                    std::printf("%s: %s\n", item.name.c_str(), v.c_str());
                }
                object[item.name] = v;
            },
            item.value);
    }
    if (json) {
        std::printf("%s\n", object.dump().c_str());
    }
    std::fflush(stdout);
}

}  // namespace vnet::pktgen
