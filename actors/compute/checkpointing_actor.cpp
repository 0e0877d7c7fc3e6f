// The checkpoint protocol of the coordinator (coordinator_state.hpp).
//
// Saving: every rank first writes its compressor state next to the model
// checkpoint (residuals and momentum differ per rank), then rank 0 writes the
// model checkpoint (all replicas hold the same weights and solver state), so
// the checkpoint's iteration always has a file for each rank: the last or the
// one before (core/train/compressor_checkpoint.hpp). A failed answer stops
// the run like any other.
//
// Restoring (a resumed run, or an elastic regroup: PendingRestore): every
// replica loads the checkpoint, then every rank its compressor state.

#include <spdlog/spdlog.h>

#include "actors/compute/coordinator_state.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

void save_checkpoint(Coordinator* self, const TrainPosition& at, std::function<void()> then) {
  auto& s = self->state;
  const RunPlan& plan = *s.plan;
  if (plan.checkpoint_path.empty()) return then();
  // The loss since the checkpoint now on disk says what that one is worth.
  const bool previous_sane = s.loss_watch.close_interval() && !s.checkpoints.latest.path.empty();
  const msg::SaveCheckpoint model{plan.checkpoint_path.string(), plan.keep_all, previous_sane, at.epoch, at.batch,
                                  at.elapsed_seconds, at.epoch_loss_sum};
  const auto iteration = static_cast<std::uint64_t>(at.epoch * plan.per_epoch + at.batch);
  auto write_model = [self, model, iteration, then] {
    ask_worker<bool>(
        self, 0, model,
        [self, model, iteration, then](bool) {
          auto& s = self->state;
          s.checkpoint_global_batch = s.plan->global_batch();
          s.checkpoint_per_epoch = s.plan->per_epoch;
          s.checkpoint_rank_node = s.members.rank_node;
          if (model.previous_sane)
            s.checkpoints.sane = {sane_checkpoint_path(s.plan->checkpoint_path), s.checkpoints.latest.iteration,
                                  s.loss_watch.last_mean()};
          s.checkpoints.latest = {s.plan->checkpoint_path, iteration, 0.0};
          then();
        },
        "the checkpoint request");
  };
  if (!plan.compressed()) return write_model();
  ask_workers<bool>(
      self, msg::SaveCompressorState{plan.checkpoint_path.string(), at.epoch * plan.per_epoch + at.batch,
                                     previous_sane},
      [write_model](std::vector<bool>&) { write_model(); }, "the compressor checkpoint request");
}

void restore_generation(Coordinator* self, std::function<void()> then) {
  auto& s = self->state;
  if (!s.restore) return then();
  auto restore = std::make_shared<CoordinatorState::PendingRestore>(std::move(*s.restore));
  s.restore.reset();
  ask_workers<bool>(
      self, restore->checkpoint,
      [self, restore, then](std::vector<bool>&) {
        if (restore->compressors.empty()) return then();
        ask_workers_each<bool>(
            self, [restore](std::size_t r) { return restore->compressors[r]; },
            [then](std::vector<bool>&) { then(); }, "the compressor restore request");
      },
      "the checkpoint restore request");
}

}  // namespace taihu::compute
