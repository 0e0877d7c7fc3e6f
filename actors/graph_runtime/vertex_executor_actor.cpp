#include "actors/graph_runtime/vertex_executor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>

#include "actors/exception_reason.hpp"
#include "core/common/flush_to_zero.hpp"
#include "messages/type_ids.hpp"

namespace taihu::graph {
namespace {

using msg::VertexStep;

struct ExecutorState {
  std::shared_ptr<ExecutorPart> part;
  static inline const char* name = "vertex_executor";
};

using Self = caf::stateful_actor<ExecutorState>;

// Runs one step; returns the value that goes back in `round`.
int32_t run(ExecutorPart& p, VertexStep step, int32_t round) {
  cavs::Executor& e = p.executor;
  switch (step) {
    case VertexStep::inputs:
      e.set_inputs(p.graphs, p.first_sample);
      e.set_loss_scale(p.loss_scale);
      p.metrics = {};
      return e.num_rounds();
    case VertexStep::forward_eager: e.forward_eager(); break;
    case VertexStep::forward_round: e.forward_round(round); break;
    case VertexStep::forward_lazy: e.forward_lazy(); break;
    case VertexStep::backward_lazy: e.backward_lazy(); break;
    case VertexStep::backward_round: e.backward_round(round); break;
    case VertexStep::backward_eager: e.backward_eager(); break;
    case VertexStep::weight_gradients:
      e.prepare_weight_gradients();
      e.accumulate_weight_gradients();
      break;
    case VertexStep::metrics: p.metrics.add(e, p.graphs); break;
  }
  return round;
}

caf::behavior vertex_executor(Self* self, std::shared_ptr<ExecutorPart> part) {
  self->state.part = std::move(part);
  self->set_exception_handler(exception_reason);
  enable_flush_to_zero();  // this actor's own thread (detached)
  return {
      [=](const msg::VertexWork& w) {
        const auto start = std::chrono::steady_clock::now();
        const int32_t round = run(*self->state.part, w.step, w.round);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return msg::VertexWorkDone{w.batch, w.executor, w.step, round, seconds};
      },
  };
}

}  // namespace

caf::actor spawn_vertex_executor(caf::actor_system& system, std::shared_ptr<ExecutorPart> part) {
  return system.spawn<caf::detached>(vertex_executor, std::move(part));
}

}  // namespace taihu::graph
