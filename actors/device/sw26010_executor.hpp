#pragma once
// A net on the simulated SW26010 (devices/sw26010): a LayerExecutor whose
// layers become work messages to 4 core-group actors. Each actor owns one
// CoreGroup of the plan (single-threaded state) and runs its share of the
// batch through the model's kernels with real numerics (msg::CoreGroupWork ->
// msg::CoreGroupDone); the executor sends a phase to all 4, suspends the
// caller's step until the 4 answers are in (actors/ask.hpp), and charges the phase the slowest group's cycles plus the
// core-group Simple_Sync (as Chip::run_split). Between phases it runs the
// plan's host (MPE) steps: BatchNorm adds the groups' statistics between
// channel_sums and channel_affine, weight gradients are added on CG 0.
//
// Training iterations (begin_iteration .. end_iteration) are timed: per layer
// forward, data gradient and weight gradient, per iteration, images/s. The
// test phase runs the layers' CPU code (same numbers, not timed).
//
// Core-group actors are scheduled (not detached): with CAF's scheduler at one
// thread per core, the 4 groups share the cores.

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>

#include "core/net/layer_executor.hpp"
#include "devices/sw26010/params.hpp"
#include "messages/core_group_work.hpp"

namespace taihu {
class Net;
}

namespace taihu::sw26010 {
class NetPlan;
}

namespace taihu::device {

// A core group's protocol: a phase of a layer's pass, answered with the
// group's simulated cycles and DMA bytes.
using core_group_actor = caf::typed_actor<caf::replies_to<msg::CoreGroupWork>::with<msg::CoreGroupDone>>;

class Sw26010Executor final : public LayerExecutor {
 public:
  // Spawns the 4 core-group actors in `system`, the process's one actor
  // system (with taihu's message types).
  Sw26010Executor(caf::actor_system& system, Net& net,
                  const sw26010::Params& params = sw26010::Params::defaults());
  ~Sw26010Executor() override;

  async::Task<> forward(std::size_t i) override;
  async::Task<> backward(std::size_t i) override;
  void begin_iteration(int64_t batch) override;
  void end_iteration() override;
  DeviceReport report() const override;

  sw26010::NetPlan& plan();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};


}  // namespace taihu::device
