#pragma once
// What the coordinator asks of a worker's replica besides iterations
// (actors/compute/worker.hpp): checkpoints, their restoring, a probe, and the
// replica's own figures at the end of a run (ReplicaFigures).

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/cavs/executor.hpp"
#include "core/net/layer_executor.hpp"
#include "core/train/replica.hpp"

namespace taihu::msg {

// Write this replica's checkpoint (rank 0's: all replicas agree) at the
// position given; answered true once it is on disk.
struct SaveCheckpoint {
  std::string path;
  bool keep_all = false;
  // The loss stayed sane after the checkpoint now at `path`: keep that one as
  // the last sane checkpoint before this save replaces it (loss_check.hpp).
  bool previous_sane = false;
  std::int64_t epoch = 0;  // completed epochs
  std::int64_t batch = 0;  // batches done in the current epoch
  double elapsed_seconds = 0;
  double epoch_loss_sum = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SaveCheckpoint& x) {
  return f(caf::meta::type_name("taihu::msg::SaveCheckpoint"), x.path, x.keep_all, x.previous_sane, x.epoch, x.batch,
           x.elapsed_seconds, x.epoch_loss_sum);
}

// Write this rank's compressor state (every shard's residuals and momentum)
// next to the model checkpoint `path`, tagged with the iterations done.
// With `previous_sane`, the state saved before is first kept beside the last
// sane model checkpoint (as SaveCheckpoint does with the model).
struct SaveCompressorState {
  std::string path;
  std::int64_t iteration = 0;
  bool previous_sane = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SaveCompressorState& x) {
  return f(caf::meta::type_name("taihu::msg::SaveCompressorState"), x.path, x.iteration, x.previous_sane);
}

// Restore the replica from a checkpoint: its bytes (encode_checkpoint), for a
// node that need not see the coordinator's files, or else the file at `path`
// (an elastic regroup: the cluster's shared checkpoint). The data is
// positioned at the checkpoint's own position, or at (epoch, batch) when
// `reposition` (a regroup onto another global batch maps the position).
struct RestoreCheckpoint {
  std::string bytes;
  std::string path;
  std::string source;  // for errors: "'out/run.ckpt'"
  bool reposition = false;
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RestoreCheckpoint& x) {
  return f(caf::meta::type_name("taihu::msg::RestoreCheckpoint"), x.bytes, x.path, x.source, x.reposition, x.epoch,
           x.batch);
}

// A worker's answer to a probe: a worker busy computing cannot answer; one
// whose step awaits something (a compute slot, an actor) or that waits for
// its reductions can, and says which.
struct WorkerProbe {
  std::uint64_t iteration = 0;
  bool in_iteration = false;
  std::uint64_t buckets_pending = 0;
  bool awaits_slot = false;   // its step waits for a compute slot
  bool awaits_actor = false;  // its step waits for an actor: its batch, a device's core groups, the graph runtime
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkerProbe& x) {
  return f(caf::meta::type_name("taihu::msg::WorkerProbe"), x.iteration, x.in_iteration, x.buckets_pending,
           x.awaits_slot, x.awaits_actor);
}

}  // namespace taihu::msg

namespace taihu::cavs {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ExecutorStats& x) {
  return f(caf::meta::type_name("taihu::cavs::ExecutorStats"), x.schedule_seconds, x.forward_seconds,
           x.backward_seconds, x.weight_gradient_seconds, x.batches, x.rounds, x.vertices, x.gemm_calls, x.gemm_flops,
           x.gemm_seconds);
}

}  // namespace taihu::cavs

// A replica's own figures (core/train/replica.hpp, answer to figures_atom)
// travel as the core types they are, with their inspect functions here.
namespace taihu {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DeviceLayerTime& x) {
  return f(caf::meta::type_name("taihu::DeviceLayerTime"), x.name, x.type, x.method, x.simulated, x.forward_seconds,
           x.data_gradient_seconds, x.weight_gradient_seconds);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DeviceReport& x) {
  return f(caf::meta::type_name("taihu::DeviceReport"), x.device, x.iterations, x.simulated_seconds, x.update_seconds,
           x.images, x.host_seconds, x.host_cpu_seconds, x.layers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, LayerKernels& x) {
  return f(caf::meta::type_name("taihu::LayerKernels"), x.layer, x.forward, x.data_gradient, x.weight_gradient);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ReplicaFigures& x) {
  return f(caf::meta::type_name("taihu::ReplicaFigures"), x.device, x.fused_runs, x.convolutions, x.executor,
           x.runner, x.data_skipped, x.data_left_out);
}

}  // namespace taihu
