// A ring rule a guest broke, as a queue reports it: the queue stops itself
// at once, and its owner logs `what: detail` and breaks the device (virtio
// is pure: it neither logs nor touches the connection).
#pragma once

#include "virtio/ring/pop_status.hpp"

namespace vnet::virtio {

struct RingFault {
    const char* what = "";    // the part of the ring, e.g. "TX descriptor chain"
    const char* detail = "";  // the rule, e.g. to_string(PopStatus)
};

// A pop that broke the ring: the avail side itself (split: avail->idx jump
// or a head out of range) or one chain, named as the port always named them.
inline RingFault pop_fault(bool tx, PopStatus s) {
    const bool avail_side = s == PopStatus::avail_index_jump || s == PopStatus::head_out_of_range;
    if (tx) {
        return {avail_side ? "TX avail ring" : "TX descriptor chain", to_string(s)};
    }
    return {avail_side ? "RX avail ring" : "RX descriptor chain", to_string(s)};
}

}  // namespace vnet::virtio
