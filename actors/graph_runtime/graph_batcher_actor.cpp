#include "actors/graph_runtime/graph_batcher.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <deque>
#include <optional>

#include "actors/exception_reason.hpp"
#include "core/common/check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::graph {
namespace {

using msg::VertexStep;

struct Part {
  int32_t rounds = 0;
  bool done = false;
  bool in_flight = false;  // a work item is out
};

struct BatcherState {
  std::vector<caf::actor> executors;
  std::vector<Part> parts;
  std::uint64_t batch = 0;
  bool backward = true;
  bool running = false;
  std::size_t finished = 0;
  bool gradient_token_taken = false;
  std::deque<std::uint32_t> waiting_for_token;
  caf::response_promise promise;
  caf::error failure;  // an executor died: answer once no part has work out
  static inline const char* name = "graph_batcher";
};

using Self = caf::stateful_actor<BatcherState>;

void send_work(Self* self, std::uint32_t k, VertexStep step, int32_t round = 0) {
  self->state.parts[k].in_flight = true;
  self->send(self->state.executors[k], msg::VertexWork{self->state.batch, k, step, round});
}

// After a failure: once no live executor is still running an item of this
// batch (so nothing reads the batch's data any more), fail the request, quit.
void finish_failed(Self* self) {
  auto& s = self->state;
  for (const Part& p : s.parts)
    if (p.in_flight) return;
  if (s.running) s.promise.deliver(s.failure);
  s.running = false;
  self->quit(s.failure);
}

// The item that follows `done` in part k's plan.
void advance(Self* self, const msg::VertexWorkDone& done) {
  auto& s = self->state;
  const std::uint32_t k = done.executor;
  Part& p = s.parts[k];
  switch (done.step) {
    case VertexStep::inputs:
      p.rounds = done.round;
      return send_work(self, k, VertexStep::forward_eager);
    case VertexStep::forward_eager:
      return p.rounds > 0 ? send_work(self, k, VertexStep::forward_round, 0)
                          : send_work(self, k, VertexStep::forward_lazy);
    case VertexStep::forward_round:
      return done.round + 1 < p.rounds ? send_work(self, k, VertexStep::forward_round, done.round + 1)
                                       : send_work(self, k, VertexStep::forward_lazy);
    case VertexStep::forward_lazy:
      return send_work(self, k, s.backward ? VertexStep::backward_lazy : VertexStep::metrics);
    case VertexStep::backward_lazy:
      return p.rounds > 0 ? send_work(self, k, VertexStep::backward_round, p.rounds - 1)
                          : send_work(self, k, VertexStep::backward_eager);
    case VertexStep::backward_round:
      return done.round > 0 ? send_work(self, k, VertexStep::backward_round, done.round - 1)
                            : send_work(self, k, VertexStep::backward_eager);
    case VertexStep::backward_eager:
      if (s.gradient_token_taken) {
        s.waiting_for_token.push_back(k);
        return;
      }
      s.gradient_token_taken = true;
      return send_work(self, k, VertexStep::weight_gradients);
    case VertexStep::weight_gradients:
      s.gradient_token_taken = false;
      if (!s.waiting_for_token.empty()) {
        const std::uint32_t next = s.waiting_for_token.front();
        s.waiting_for_token.pop_front();
        s.gradient_token_taken = true;
        send_work(self, next, VertexStep::weight_gradients);
      }
      return send_work(self, k, VertexStep::metrics);
    case VertexStep::metrics:
      p.done = true;
      if (++s.finished == s.parts.size()) {
        s.running = false;
        s.promise.deliver(true);
      }
      return;
  }
}

caf::behavior graph_batcher(Self* self, std::vector<caf::actor> executors) {
  self->state.executors = std::move(executors);
  self->set_exception_handler(exception_reason);
  for (auto& e : self->state.executors) self->monitor(e);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& s = self->state;
    if (!s.failure)
      s.failure = dm.reason ? dm.reason : caf::make_error(caf::sec::runtime_error, "a vertex executor stopped");
    for (std::size_t k = 0; k < s.executors.size() && k < s.parts.size(); ++k)
      if (s.executors[k].address() == dm.source) s.parts[k].in_flight = false;
    finish_failed(self);
  });
  return {
      [=](const msg::RunGraphBatch& run) {
        auto& s = self->state;
        const std::uint32_t parts = run.parts;
        require(!s.running, "graph batcher: batch {} requested while batch {} runs", run.batch, s.batch);
        require(parts >= 1 && parts <= s.executors.size(), "graph batcher: {} parts for {} executors", parts,
                s.executors.size());
        s.batch = run.batch;
        s.backward = run.backward;
        s.parts.assign(parts, Part{});
        s.finished = 0;
        s.gradient_token_taken = false;
        s.waiting_for_token.clear();
        s.running = true;
        s.promise = self->make_response_promise();
        for (std::uint32_t k = 0; k < parts; ++k) send_work(self, k, VertexStep::inputs);
      },
      [=](const msg::VertexWorkDone& done) {
        auto& s = self->state;
        if (!s.running || done.batch != s.batch || done.executor >= s.parts.size()) return;  // stale
        s.parts[done.executor].in_flight = false;
        if (s.failure) return finish_failed(self);
        advance(self, done);
      },
  };
}

}  // namespace

caf::actor spawn_graph_batcher(caf::actor_system& system, std::vector<caf::actor> executors) {
  return system.spawn(graph_batcher, std::move(executors));
}

}  // namespace taihu::graph
