// SIGINT/SIGTERM/SIGHUP handling for vnet-bench: the first signal sets a
// flag that every wait in the tool checks (and throws Interrupted), so the
// stack unwinds and RAII stops the processes and removes the namespaces the
// run made. A second signal kills the registered child PIDs and exits at once.
#pragma once

#include <stdexcept>

namespace vnet::bench {

struct Interrupted : std::runtime_error {
    Interrupted() : std::runtime_error("interrupted by a signal") {}
};

void install_interrupt_handlers();
bool interrupted();
void throw_if_interrupted();

// Sleeps in short slices; throws Interrupted when a signal arrives.
void sleep_for(double seconds);

}  // namespace vnet::bench
