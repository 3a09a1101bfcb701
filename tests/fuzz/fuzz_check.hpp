// FUZZ_CHECK: a fuzz target's assertion. A trap, not abort() or an
// exception: libFuzzer reports it as a crash with the input that caused
// it, whatever the build's NDEBUG says.
#pragma once

#define FUZZ_CHECK(cond)      \
    do {                      \
        if (!(cond)) {        \
            __builtin_trap(); \
        }                     \
    } while (0)
