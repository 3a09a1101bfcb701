// RingState: one ring as `vnetctl show` reports it, VPP `show vhost-user`
// style: the device's cursors as the owning worker keeps them, and the
// guest's side of the ring as it reads in guest memory now. Each ring model
// fills it (DeviceRing::state()) with the fields of its format, by name, so
// what shows a ring never names a format.
//
// Read on the ring's owner only (between rounds): the cursors are plain
// worker state. The guest fields are read through the layout the device
// validated when the ring started (each area wholly inside one region,
// aligned; the event words are part of those areas), with the same
// single-copy atomic loads as the datapath; the caller guards the read
// against SIGBUS like a turn (the front end may have shrunk its memory).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace vnet::virtio {

// One named 16-bit word of a ring (a guest field, or a yes/no the model
// derives from guest memory). Names are static strings.
struct RingField {
    const char* name = nullptr;
    uint16_t value = 0;
    bool boolean = false;  // a yes/no, value 0 or 1
};

// A model's fields in its own order; fixed room, so filling one never
// allocates.
class RingFields {
public:
    static constexpr size_t kCapacity = 8;
    void add(const char* name, uint16_t value) { push(RingField{name, value, false}); }
    void add_boolean(const char* name, bool value) {
        push(RingField{name, value ? uint16_t{1} : uint16_t{0}, true});
    }
    std::span<const RingField> view() const { return {items_.data(), count_}; }
    // The value of the field called `name`, if the model gave one.
    std::optional<uint16_t> find(std::string_view name) const {
        for (const RingField& f : view()) {
            if (name == f.name) {
                return f.value;
            }
        }
        return std::nullopt;
    }

private:
    void push(const RingField& f) {
        if (count_ < kCapacity) {  // a model adds a fixed handful; more is a bug, dropped
            items_[count_++] = f;
        }
    }
    std::array<RingField, kCapacity> items_{};
    size_t count_ = 0;
};

struct RingState {
    const char* format = "";  // R::kName
    uint16_t size = 0;
    // The device's cursors in the format's vhost-user encoding: where it takes
    // the next chain, and where its next used entry goes (staged ones
    // included). `cursor_encoding` says how to read them when they are not
    // plain free-running indexes (nullptr).
    uint16_t last_avail_idx = 0;
    uint16_t last_used_idx = 0;
    const char* cursor_encoding = nullptr;
    // From guest memory (empty for a ring that never started).
    RingFields guest;
};

// A vring base (GET_VRING_BASE / SET_VRING_BASE) read as positions, for a
// log line: each named ("avail", "used"), with its wrap counter if the
// format has one. R::decode_vring_base fills it, reading the base exactly as
// restore_vring_base would.
struct BasePosition {
    const char* name = nullptr;
    uint16_t index = 0;
    std::optional<bool> wrap;
};
struct VringBasePositions {
    std::array<BasePosition, 2> items{};
    size_t count = 0;
    std::span<const BasePosition> view() const { return {items.data(), count}; }
};

}  // namespace vnet::virtio
