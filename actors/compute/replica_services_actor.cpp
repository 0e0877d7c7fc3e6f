#include "actors/compute/replica_services.hpp"

#include <caf/actor_system.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/feed/batch_loader.hpp"
#include "actors/device/sw26010_executor.hpp"
#include "actors/graph_runtime/graph_runner.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/kernels/compute_threads.hpp"
#include "devices/sw26010/params.hpp"

namespace taihu::compute {

ReplicaServices replica_services(caf::actor_system& system, int replicas) {
  ReplicaServices services;
  services.devices = [&system](const std::string& device, Net& net,
                               const config::Document& doc) -> std::unique_ptr<LayerExecutor> {
    // Only sw26010 exists (the replica checked the name); the chip's
    // parameters are config/devices/sw26010.ini's, overridden by [sw26010].
    const config::Section* section = doc.find("sw26010");
    const sw26010::Params params = section ? sw26010::Params::from(*section) : sw26010::Params::defaults();
    spdlog::info("device {}: 4 core-group actors, {:.2f} GHz, 64 CPEs each", device, params.clock_hz / 1e9);
    return std::make_unique<device::Sw26010Executor>(system, net, params);
  };
  const int per_process = std::max(1, replicas);
  services.runner = [&system, per_process](cavs::VertexFunction& f,
                                  const config::Document& doc) -> std::unique_ptr<cavs::BatchRunner> {
    const config::Section& root = doc.root();
    auto options = graph::read_graph_runner_options(doc);  // read either way: no "unknown option"
    if (root.get_choice("graph_runtime", {"actors", "inline"}, "actors") == "inline")
      return std::make_unique<cavs::InlineRunner>(f);
    if (root.get_or<int>("executors", 0) == 0)
      options.executors = std::max(1, blas::available_cores() / (std::max(1, compute_threads()) * per_process));
    spdlog::info("graph runtime: {} vertex executors x {} BLAS threads per replica", options.executors,
                 compute_threads());
    return graph::make_graph_runner(system, f, options);
  };
  services.feeds = feed::actor_batch_feeds(system);
  return services;
}

}  // namespace taihu::compute
