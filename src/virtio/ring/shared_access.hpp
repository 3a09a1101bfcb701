// Loads and stores of fields in memory the guest shares with us. Every such
// access goes through one of these, so none is a plain access the compiler
// could split, merge or repeat; each call site says which ordering it needs.
#pragma once

#include <atomic>

namespace vnet::virtio::shared {

template <typename T>
inline T load_relaxed(const T& field) {
    return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}
template <typename T>
inline T load_acquire(const T& field) {
    return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_acquire);
}
template <typename T>
inline void store_relaxed(T& field, T value) {
    std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}
template <typename T>
inline void store_release(T& field, T value) {
    std::atomic_ref<T>(field).store(value, std::memory_order_release);
}

}  // namespace vnet::virtio::shared
