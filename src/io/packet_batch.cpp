#include "io/packet_batch.hpp"

namespace vnet::io {

std::string_view to_string(BatchMode mode) {
    switch (mode) {
        case BatchMode::io_uring:
            return "io_uring";
        case BatchMode::writev:
            return "writev";
    }
    return "?";
}

std::optional<BatchMode> parse_batch_mode(std::string_view text) {
    if (text == "io_uring") {
        return BatchMode::io_uring;
    }
    if (text == "writev") {
        return BatchMode::writev;
    }
    return std::nullopt;
}

}  // namespace vnet::io
