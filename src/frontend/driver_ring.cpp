#include "frontend/driver_ring.hpp"

namespace vnet::frontend {

const char* to_string(UsedRingError e) {
    switch (e) {
        case UsedRingError::ok:
            return "ok";
        case UsedRingError::used_index_jump:
            return "used index moved past the chains in flight";
        case UsedRingError::id_out_of_range:
            return "used id out of range";
        case UsedRingError::id_not_in_flight:
            return "used id not in flight";
    }
    return "unknown";
}

}  // namespace vnet::frontend
