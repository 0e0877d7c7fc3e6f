// The elastic regroup of the coordinator (coordinator_state.hpp, cluster.hpp):
// instead of stopping when a node is lost (or when nodes joined, at an epoch
// boundary), the coordinator drops the lost node, tells the others to drop
// their replicas, places workers-per-node ranks on each live node (a new
// generation: answers and failures of older ones are ignored) and every new
// replica loads the last checkpoint. Training goes on from its position with
// the same global batch: each worker takes a larger share, and the position
// is mapped by sample offset when that changes the global batch. With
// compression, each new rank takes the states of the old ranks that ran on
// its node, weighted so that their pending updates (residual sum / ranks)
// carry over (merge_states); those of a lost node are gone with it, a node
// that joined starts from zero.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/compute/coordinator_state.hpp"
#include "core/train/checkpoint.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

namespace {

// Where training goes on, and what each new rank loads.
void plan_restore(Coordinator* self) {
  auto& s = self->state;
  const RunPlan& plan = *s.plan;
  if (plan.checkpoint_path.empty() || !std::filesystem::exists(plan.checkpoint_path)) {
    s.cursor = EpochCursor(plan.settings.epochs, plan.per_epoch, plan.max_iterations, plan.checkpoint_every, {});
    s.elapsed = 0.0;
    s.loss_sum = 0.0;
    return;
  }
  const Checkpoint c = load_checkpoint(plan.checkpoint_path);
  const int64_t old_global = s.checkpoint_global_batch, new_global = plan.global_batch();
  // The same sample offset in the epoch's order, at the new global batch.
  TrainPosition at{c.epoch, c.batch * old_global / new_global, c.elapsed_seconds, 0.0};
  if (c.batch > 0) at.epoch_loss_sum = c.epoch_loss_sum * static_cast<double>(at.batch) / static_cast<double>(c.batch);
  if (at.batch >= plan.per_epoch) at = {at.epoch + 1, 0, at.elapsed_seconds, 0.0};
  CoordinatorState::PendingRestore restore;
  restore.checkpoint.path = plan.checkpoint_path.string();
  restore.checkpoint.source = fmt::format("'{}'", restore.checkpoint.path);
  restore.checkpoint.reposition = true;
  restore.checkpoint.epoch = at.epoch;
  restore.checkpoint.batch = at.batch;
  if (plan.compressed()) {
    // The files stay those of the checkpoint's ranks.
    const int old_ranks = static_cast<int>(s.checkpoint_rank_node.size());
    for (int r = 0; r < plan.ranks; ++r) {
      const int node = s.members.rank_node[static_cast<std::size_t>(r)];
      msg::CompressorRestore cr{plan.checkpoint_path.string(), c.epoch * s.checkpoint_per_epoch + c.batch,
                                old_ranks, {}, 1.0f};
      for (int q = 0; q < old_ranks; ++q)
        if (s.checkpoint_rank_node[static_cast<std::size_t>(q)] == node) cr.sources.push_back(q);
      const auto sharing = std::count(s.members.rank_node.begin(), s.members.rank_node.end(), node);
      cr.weight = static_cast<float>(static_cast<double>(plan.ranks) / old_ranks / static_cast<double>(sharing));
      restore.compressors.push_back(std::move(cr));
    }
  }
  s.restore = std::move(restore);
  s.cursor = EpochCursor(plan.settings.epochs, plan.per_epoch, plan.max_iterations, plan.checkpoint_every, at);
  s.elapsed = at.elapsed_seconds;
  s.loss_sum = at.epoch_loss_sum;
}

}  // namespace

void regroup(Coordinator* self, const std::string& why, int lost_node) {
  auto& s = self->state;
  if (s.iteration) s.iteration->cancel();
  s.progress.reset();
  if (lost_node >= 0) s.cluster->lose(self, lost_node);
  for (auto& w : s.members.workers)
    if (w) self->demonitor(w.address());
  // The old generation is over: its answers and failures no longer count.
  s.members = Members{};
  s.status->set_state("re-forming: " + why);
  // A node that cannot drop its replicas within a step's time is as good as
  // lost (a hung one fails the request after dead_after already).
  const auto drop_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(1000 * std::max(s.plan->step_timeout, s.plan->cluster.dead_after + 2.0)));
  s.cluster->drop_replicas(self, drop_timeout, [self, why] {
    auto& s = self->state;
    const auto live = s.cluster->live();
    if (live.empty())
      return abort_with(self, std::make_exception_ptr(
                                  WorkerFailure(-1, fmt::format("{}; no node is left to continue with", why))));
    const int per_node = static_cast<int>(s.plan->settings.workers) / s.plan->cluster.nodes;
    try {
      s.plan->replan(per_node * static_cast<int>(live.size()));
    } catch (...) {
      return abort_with(self, std::current_exception());
    }
    s.cluster->form(
        self, *s.plan,
        [self, why](Members m) {
          auto& s = self->state;
          s.members.rank_node = m.rank_node;  // plan_restore places compressor states by node
          plan_restore(self);
          s.checkpoint_global_batch = s.plan->global_batch();
          spdlog::warn("elastic: {}; continuing on {} nodes with {} ranks x batch {} from epoch {} batch {} of {}", why,
                       s.cluster->live().size(), s.plan->ranks, s.plan->settings.batch_size, s.cursor.epoch() + 1,
                       s.cursor.batch(), s.plan->per_epoch);
          begin_generation(self, std::move(m));
        },
        [self, why](const std::string& failure) {
          abort_with(self, std::make_exception_ptr(
                               WorkerFailure(-1, fmt::format("{}; re-forming the cluster failed: {}", why, failure))));
        });
  });
}

}  // namespace taihu::compute
