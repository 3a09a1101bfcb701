#include "control/metrics/build_info_family.hpp"

#include "common/build_info.hpp"

namespace vnet::control {

void add_build_info_family(MetricFamilies& out) {
    prometheus::MetricFamily f;
    f.name = "vnetd_build_info";
    f.help = "the running vnetd's version and the commit it was built from (always 1)";
    f.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric m;
    m.label = {{"commit", std::string(build_info::commit())},
               {"version", std::string(build_info::version())}};
    m.gauge.value = 1;
    f.metric.push_back(std::move(m));
    out.push_back(std::move(f));
}

}  // namespace vnet::control
