#include "control/workers/worker_methods.hpp"

#include "control/rpc/method_helpers.hpp"

namespace vnet::control {

void add_worker_methods(rpc::MethodTable& table, DaemonControl& api) {
    table.add("worker.list",
              "each worker: CPU, mode, the queue pairs and switches it runs, busy and idle time",
              kNoParams, [&api](const nlohmann::json&) { return api.list_workers(); });
}

}  // namespace vnet::control
