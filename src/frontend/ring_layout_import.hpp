// Brings in the shared virtio ring layout types. virtio/ring/split_layout.hpp declares the
// rings with flexible array members (a GNU/C99 extension that -Wpedantic
// rejects); the layout is exactly the virtio one, so the warning is silenced
// for that header only.
#pragma once

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc99-extensions"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include "virtio/ring/split_layout.hpp"
#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
