#include "experiments/txonly_front_end.hpp"

namespace vnet::bench {

double measure_with_txonly_front_end(BenchContext& ctx, const std::string& label,
                                     const std::string& sock, const TxonlyFrontEnd& front_end,
                                     const std::function<CounterSample()>& sample,
                                     const std::function<std::string()>& backend_failure) {
    TestpmdInstance gen(ctx, testpmd_txonly_generator(ctx, label + "-gen", sock, front_end));
    // Its first periodic stats come once it forwards: EAL set-up and the
    // vhost-user handshake must not count.
    gen.wait_for_log("Port statistics|Tx-pps", 30);
    RateWindow window;
    window.warmup_s = ctx.warmup_seconds();
    window.window_s = ctx.point_seconds();
    const double rate = measure_sampled_rate(sample, window, [&]() -> std::string {
        if (std::string why = backend_failure(); !why.empty()) {
            return why;
        }
        return gen.failure();
    });
    gen.stop();
    return rate / 1e6;
}

}  // namespace vnet::bench
