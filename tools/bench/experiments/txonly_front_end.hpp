// The guest -> back end step of seed003, multiqueue and ringwork: DPDK
// testpmd net_virtio_user in txonly (the one front end, on the load CPU)
// started on the socket a back end already serves; the rate is the back
// end's counter over the window after warm-up, never the sender's.
#pragma once

#include <functional>
#include <string>

#include "harness/bench_context.hpp"
#include "harness/rate_meter.hpp"
#include "harness/testpmd_instance.hpp"

namespace vnet::bench {

// Mpps of `sample`; throws MeasureError (also when the back end fails:
// `backend_failure` returns why, "" while it runs).
double measure_with_txonly_front_end(BenchContext& ctx, const std::string& label,
                                     const std::string& sock, const TxonlyFrontEnd& front_end,
                                     const std::function<CounterSample()>& sample,
                                     const std::function<std::string()>& backend_failure);

}  // namespace vnet::bench
