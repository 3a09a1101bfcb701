// vnetd_build_info{version, commit} 1: which build is running, in the
// Prometheus convention for build information (a gauge of 1 whose labels
// are the facts), from the same values as --version (common/build_info.hpp).
#pragma once

#include "control/metrics/metrics.hpp"

namespace vnet::control {

void add_build_info_family(MetricFamilies& out);

}  // namespace vnet::control
