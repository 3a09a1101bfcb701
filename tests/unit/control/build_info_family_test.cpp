// vnetd_build_info: one series of 1 whose labels are what --version says.
#include <gtest/gtest.h>

#include "common/build_info.hpp"
#include "control/metrics/build_info_family.hpp"

namespace vnet::control {
namespace {

TEST(BuildInfo, version_line_names_program_version_and_commit) {
    EXPECT_FALSE(build_info::version().empty());
    EXPECT_FALSE(build_info::commit().empty());  // "unknown" outside git
    EXPECT_EQ(build_info::version_line("vnetd"), "vnetd " + std::string(build_info::version()) +
                                                     " (commit " +
                                                     std::string(build_info::commit()) + ")");
}

TEST(BuildInfo, the_metric_is_one_gauge_of_one_labelled_with_version_and_commit) {
    MetricFamilies out;
    add_build_info_family(out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].name, "vnetd_build_info");
    EXPECT_EQ(out[0].type, prometheus::MetricType::Gauge);
    ASSERT_EQ(out[0].metric.size(), 1u);
    EXPECT_EQ(out[0].metric[0].gauge.value, 1);
    const std::vector<prometheus::ClientMetric::Label> want{
        {"commit", std::string(build_info::commit())},
        {"version", std::string(build_info::version())}};
    EXPECT_EQ(out[0].metric[0].label, want);
}

}  // namespace
}  // namespace vnet::control
