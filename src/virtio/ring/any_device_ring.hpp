// The ring of a virtio-net queue, in whichever format the front end
// negotiated (fixed per connection). The queues hold it as a variant and
// visit it once per burst, so the per-packet RX calls, which touch only the
// RX window, never dispatch on the format; inside a visit the burst loop is
// instantiated for the concrete model.
//
// The list of formats is this variant and nothing else: what must know a
// ring's format before there is a ring (the vhost-user device choosing,
// sizing and translating areas; a vring base in a log line) holds a
// RingModel, the same list as type tags, and visits it to reach the model's
// statics.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "virtio/features.hpp"
#include "virtio/ring/device_ring.hpp"
#include "virtio/ring/packed_ring.hpp"
#include "virtio/ring/split_device_ring.hpp"

namespace vnet::virtio {

using AnyDeviceRing = std::variant<SplitDeviceRing, PackedRing>;

namespace detail {
template <typename Variant>
struct ModelTags;
template <typename... R>
struct ModelTags<std::variant<R...>> {
    static_assert((DeviceRing<R> && ...));
    using type = std::variant<std::type_identity<R>...>;
};
}  // namespace detail

// A started ring before it is built (VhostUserDevice keeps one per ready
// queue and builds a ring from it for each snapshot): its areas and its
// inflight state, in its format.
template <typename R>
struct RingStart {
    typename R::Layout layout{};
    typename R::Inflight inflight;
};
namespace detail {
template <typename Variant>
struct StartOf;
template <typename... R>
struct StartOf<std::variant<R...>> {
    using type = std::variant<RingStart<R>...>;
};
}  // namespace detail
using AnyRingStart = detail::StartOf<AnyDeviceRing>::type;

// A ring format without a ring: visit it with
// [&]<typename R>(std::type_identity<R>) { ... R::kName ... }.
using RingModel = detail::ModelTags<AnyDeviceRing>::type;

// The format a device with `negotiated` features runs: the model whose
// R::kFeature was negotiated, else the one without a feature bit.
inline RingModel ring_model(FeatureSet negotiated) {
    std::optional<RingModel> by_feature;
    RingModel by_default;
    [&]<size_t... I>(std::index_sequence<I...>) {
        (
            [&] {
                using R = std::variant_alternative_t<I, AnyDeviceRing>;
                if constexpr (R::kFeature.has_value()) {
                    if (negotiated.has(*R::kFeature)) {
                        by_feature = RingModel{std::in_place_index<I>};
                    }
                } else {
                    by_default = RingModel{std::in_place_index<I>};
                }
            }(),
            ...);
    }
    (std::make_index_sequence<std::variant_size_v<AnyDeviceRing>>{});
    return by_feature.value_or(by_default);
}

// The format as vnetctl show names it ("split", "packed").
inline const char* format_name(const RingModel& model) {
    return std::visit([]<typename R>(std::type_identity<R>) { return R::kName; }, model);
}

inline RingState read_ring_state(const AnyDeviceRing& ring) {
    return std::visit([](const auto& r) { return r.state(); }, ring);
}
inline uint16_t ring_size(const AnyDeviceRing& ring) {
    return std::visit([](const auto& r) { return r.size(); }, ring);
}
// For the log line of a port's first ring: which format it runs.
inline const char* describe_format(const AnyDeviceRing& ring) {
    return std::visit([](const auto& r) { return r.kDescription; }, ring);
}

}  // namespace vnet::virtio
