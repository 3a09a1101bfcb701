// Moved to control/metrics/metrics.hpp. This path stays only for the counter-table files
// (stats_report, metrics_families, metrics_test), which that change rewrites:
// delete it then.
#pragma once

#include "control/metrics/metrics.hpp"
