// DPDK testpmd as a peer or a traffic source. Every instance has its own
// --file-prefix and runs with --no-huge (memfd memory: nothing is reserved
// in or deleted from a hugetlbfs other tests share, pitfall 4; virtio-user
// works with it, pitfall 3), --stats-period 1 (so it neither needs -i nor
// exits on stdin's EOF, pitfall 2), and its busy-polling forwarding lcore
// alone on one CPU with the idle main lcore on the other (pitfall 1).
#pragma once

#include <string>
#include <vector>

#include "harness/bench_context.hpp"
#include "harness/process.hpp"

namespace vnet::bench {

struct TestpmdSpec {
    std::string label;
    std::vector<std::string> vdevs;     // "--vdev" values
    std::vector<std::string> app_args;  // after "--"
    std::string netns;
    int forwarding_cpu = 0;
    int main_cpu = 0;
    int memory_mb = 512;
};

class TestpmdInstance {
public:
    // Throws MeasureError when dpdk-testpmd is not installed.
    TestpmdInstance(BenchContext& ctx, const TestpmdSpec& spec);
    ~TestpmdInstance();
    TestpmdInstance(const TestpmdInstance&) = delete;
    TestpmdInstance& operator=(const TestpmdInstance&) = delete;

    // Waits until its log matches `regex`; throws MeasureError with the
    // log's last line when testpmd exits or the time runs out.
    void wait_for_log(const std::string& regex, double timeout_s = 30);
    std::string failure();
    void stop();
    const std::string& log_path() const { return log_path_; }
    // testpmd's (stdbuf execs it).
    pid_t pid() const { return process_.pid(); }
    // EAL's runtime directory (its telemetry socket lives there).
    std::string runtime_dir() const { return "/var/run/dpdk/" + prefix_; }

private:
    std::string prefix_;
    std::string log_path_;
    ChildProcess process_;
};

struct TxonlyFrontEnd {
    int frame_bytes = 64;
    int queues = 1;
    bool packed = false;  // packed_vq=1 (VIRTIO_F_RING_PACKED)
    int total_mbufs = 32768;
};

// The vhost-user front end of seed003, multiqueue and ringwork:
// net_virtio_user in txonly mode (burst 32, testpmd's default), forwarding
// on the load CPU.
TestpmdSpec testpmd_txonly_generator(const BenchContext& ctx, const std::string& label,
                                     const std::string& socket_path,
                                     const TxonlyFrontEnd& front_end = {});
// The DPDK back end of ringwork: net_vhost (server on socket_path) alone in
// rxonly (every packet freed at once), forwarding on the CPU under test.
TestpmdSpec testpmd_vhost_rxonly(const BenchContext& ctx, const std::string& label,
                                 const std::string& socket_path);
// The DPDK back end: net_vhost (server on socket_path) io-forwarding to a
// net_tap `tap`, forwarding on the CPU under test.
TestpmdSpec testpmd_vhost_to_tap(const BenchContext& ctx, const std::string& label,
                                 const std::string& socket_path, const std::string& tap,
                                 const std::string& netns);
// net_vhost ports (servers on socket_paths) in io forwarding, paired
// 0 <-> 1, 2 <-> 3 ...: the raw DPDK ceiling of a VM <-> VM cross-connect.
TestpmdSpec testpmd_vhost_io(const BenchContext& ctx, const std::string& label,
                             const std::vector<std::string>& socket_paths);
// Two net_tap ports in io forwarding (the tap <-> tap peer).
TestpmdSpec testpmd_tap_to_tap(const BenchContext& ctx, const std::string& label,
                               const std::string& tap_a, const std::string& tap_b,
                               const std::string& netns);

}  // namespace vnet::bench
