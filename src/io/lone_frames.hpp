// LoneFrames: whether a source's frames come one at a time, so that the
// read after a frame, which would find nothing, is left out.
//
// A reader that found a frame reads again to take whatever is queued
// behind it in the same burst (batching: one system call for many). When
// frames come one at a time (a request and its reply, a ping-pong) that
// second read finds nothing, and it is a system call on the frame's way:
// before the tap write or the guest's call that hands the frame on (a
// readv, ~0.3 us; the io_uring_enter of a batch of reads, more). So once
// a round found exactly one frame and the read after it nothing, the next
// round hands its first frame over at once. If the round after that finds
// a frame at its first read, frames were queued behind the one handed
// over: the source is streaming, and rounds read in batches again, having
// cost the stream one round.
#pragma once

#include <cstdint>

namespace vnet::io {

class LoneFrames {
public:
    // After a round's first read, which found a frame or not: true means
    // stop the round at that frame (no read after it).
    bool stop_after_first(bool found) {
        if (checking_) {
            checking_ = false;
            if (found) {
                lone_ = false;  // frames were queued behind the last one
                return false;
            }
        }
        if (found && lone_) {
            checking_ = true;  // the next round's first read tells
            return true;
        }
        return false;
    }
    // After a round that was not stopped at its first frame: it found
    // `frames` frames, and its last read found nothing (`dry`) or not.
    void round_ended(uint32_t frames, bool dry) {
        if (frames != 0) {
            lone_ = frames == 1 && dry;
        }
    }
    bool lone() const { return lone_; }

private:
    bool lone_ = false;
    bool checking_ = false;
};

}  // namespace vnet::io
