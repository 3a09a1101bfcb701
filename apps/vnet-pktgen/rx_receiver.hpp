// The RX side of vnet-pktgen (testpmd rxonly, plus verification): keep the
// RX ring stocked with writable buffers, gather each received frame from
// its buffers (several with MRG_RXBUF: num_buffers in the first header),
// verify it, and give the buffers back in batches.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "frontend/net_driver.hpp"
#include "frontend/packet_verifier.hpp"
#include "pktgen_options.hpp"
#include "run_control.hpp"
#include "run_counters.hpp"

namespace vnet::pktgen {

template <frontend::DriverRing Ring>
class RxReceiver {
public:
    // A 64 KiB GSO frame in 2 KiB mergeable buffers needs 33; more is malformed.
    static constexpr size_t kMaxBuffersPerFrame = 64;

    RxReceiver(frontend::NetDriver& device, const PktgenOptions& options);

    // Receives until --count packets, --duration or a stop signal; on a
    // signal or deadline it first takes whatever is already in the used ring.
    RxCounters run();

private:
    bool count_reached() const {
        return options_.count != 0 && counters_.packets >= options_.count;
    }
    void post_free_buffers();
    uint16_t process_used();
    void take_buffer(const frontend::Completion& completion);
    void start_frame(uint16_t buffer, std::span<const std::byte> data);
    void finish_frame();
    void count_verdict(const frontend::FrameCheck& check);

    frontend::NetDriver& device_;
    Ring& ring_;
    const PktgenOptions& options_;
    const bool mrg_rxbuf_;
    frontend::PacketVerifier verifier_;
    frontend::SequenceTracker sequence_;
    std::vector<uint16_t> free_buffers_;
    std::vector<frontend::Completion> completions_;

    // The frame being gathered: its pieces and the buffers they live in,
    // which are not handed back to the device until the frame is checked.
    std::array<frontend::FramePiece, kMaxBuffersPerFrame> pieces_{};
    bool frame_partial_checksum_ = false;  // the frame's header had NEEDS_CSUM
    std::array<uint16_t, kMaxBuffersPerFrame> piece_buffers_{};
    uint32_t piece_count_ = 0;
    uint32_t buffers_missing_ = 0;

    PeerWatch peer_;
    RxCounters counters_;
};

}  // namespace vnet::pktgen
