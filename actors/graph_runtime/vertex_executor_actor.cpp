#include "actors/graph_runtime/vertex_executor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/exception_reason.hpp"
#include "core/common/flush_to_zero.hpp"
#include "messages/type_ids.hpp"

namespace taihu::graph {
namespace {

struct ExecutorState {
  std::shared_ptr<ExecutorPart> part;
  static inline const char* name = "vertex_executor";
};

using Self = VertexExecutorActor::stateful_pointer<ExecutorState>;

// Everything of a part that writes no shared parameter diff, in the order of
// cavs::Executor's contract (forward rounds up, backward rounds down), up to
// the weight gradients in this executor's own scratch.
void run_part(ExecutorPart& p, bool backward) {
  cavs::Executor& e = p.executor;
  e.set_inputs(p.graphs, p.first_sample);
  e.set_loss_scale(p.loss_scale);
  e.forward_eager();
  for (int32_t r = 0; r < e.num_rounds(); ++r) e.forward_round(r);
  e.forward_lazy();
  p.metrics = {};
  p.metrics.add(e, p.graphs);
  if (!backward) return;
  e.backward_lazy();
  for (int32_t r = e.num_rounds(); r-- > 0;) e.backward_round(r);
  e.backward_eager();
  e.prepare_weight_gradients();
}

VertexExecutorActor::behavior_type vertex_executor(Self self, std::shared_ptr<ExecutorPart> part) {
  self->state.part = std::move(part);
  self->set_exception_handler(exception_reason);
  enable_flush_to_zero();  // this actor's own thread (detached)
  return {
      [=](const msg::RunVertexPart& run) {
        run_part(*self->state.part, run.backward);
        return msg::VertexPartReady{run.batch, run.part};
      },
      [=](const msg::WeightGradientTurn& turn) {
        self->state.part->executor.accumulate_weight_gradients();
        return msg::WeightGradientsWritten{turn.batch, turn.part};
      },
  };
}

}  // namespace

VertexExecutorActor spawn_vertex_executor(caf::actor_system& system, std::shared_ptr<ExecutorPart> part) {
  return system.spawn<caf::detached>(vertex_executor, std::move(part));
}

}  // namespace taihu::graph
