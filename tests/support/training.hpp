#pragma once
// taihu-train's one training loop, run as the app runs it: a fresh actor
// system of its own, the replicas' actor services, then compute::train.

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <filesystem>
#include <variant>
#include <vector>

#include "actors/compute/coordinator.hpp"
#include "actors/compute/replica_services.hpp"
#include "actors/compute/run_plan.hpp"
#include "apps/actor_system.hpp"
#include "core/train/graph_report.hpp"
#include "core/train/train_report.hpp"

namespace taihu::testing {

struct Training {
  std::filesystem::path resume;
  compute::WorkerFault fault;
};

inline compute::TrainingResult run_training(config::Document doc, const Training& how = {}) {
  caf::actor_system_config cfg;
  app::configure_actor_system(cfg, app::actor_system_settings(doc));  // as taihu-train's
  caf::actor_system system{cfg};
  const int replicas = std::max(1, doc.root().get_or<int>("workers", 1));
  compute::RunPlan plan =
      compute::RunPlan::read(std::move(doc), compute::replica_services(system, replicas), how.fault);
  compute::TrainingOptions options;
  options.progress = Progress::Mode::quiet;
  options.resume = how.resume;
  options.fault = how.fault;
  return compute::train(system, std::move(plan), options);
}

inline TrainReport net_report(const compute::TrainingResult& r) { return std::get<TrainReport>(r.report); }
inline GraphTrainReport graph_report(const compute::TrainingResult& r) {
  return std::get<GraphTrainReport>(r.report);
}

// Every parameter of rank 0's replica as built (before training), flattened.
inline std::vector<float> initial_parameters(config::Document doc) {
  const compute::RunPlan plan = compute::RunPlan::read(std::move(doc), {});
  std::vector<float> out;
  for (const Param* p : plan.rank0->replica->params())
    out.insert(out.end(), p->blob->data().ptr(), p->blob->data().ptr() + p->blob->count());
  return out;
}

}  // namespace taihu::testing
