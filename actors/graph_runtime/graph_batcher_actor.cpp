#include "actors/graph_runtime/graph_batcher.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>

#include "actors/exception_reason.hpp"
#include "core/common/check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::graph {
namespace {

struct BatcherState {
  std::vector<VertexExecutorActor> executors;
  // The batch being run.
  std::uint64_t batch = 0;
  bool backward = true;
  std::vector<bool> ran;           // per part: answered RunVertexPart
  std::uint32_t next_turn = 0;     // the part whose weight gradients go next
  bool turn_out = false;           // that part is writing them
  std::uint32_t requests_out = 0;  // to executors, not answered yet
  std::uint32_t messages = 0;
  caf::error failure;              // the first failed request
  caf::typed_response_promise<msg::GraphBatchDone> promise;
  static inline const char* name = "graph_batcher";
};

using Self = GraphBatcherActor::stateful_pointer<BatcherState>;

void advance(Self self);

void sent(Self self) {
  ++self->state.requests_out;
  ++self->state.messages;
}

// An answer came back, or an error in its place.
void answered(Self self) {
  --self->state.requests_out;
  ++self->state.messages;
}

void failed(Self self, caf::error& e) {
  answered(self);
  if (!self->state.failure) self->state.failure = std::move(e);
  advance(self);
}

void run_part(Self self, std::uint32_t k) {
  auto& s = self->state;
  sent(self);
  self->request(s.executors[k], caf::infinite, msg::RunVertexPart{s.batch, k, s.backward})
      .then(
          [=](const msg::VertexPartReady&) {
            answered(self);
            self->state.ran[k] = true;
            advance(self);
          },
          [=](caf::error& e) { failed(self, e); });
}

void give_turn(Self self, std::uint32_t k) {
  auto& s = self->state;
  s.turn_out = true;
  sent(self);
  self->request(s.executors[k], caf::infinite, msg::WeightGradientTurn{s.batch, k})
      .then(
          [=](const msg::WeightGradientsWritten&) {
            answered(self);
            self->state.turn_out = false;
            ++self->state.next_turn;
            advance(self);
          },
          [=](caf::error& e) { failed(self, e); });
}

// What may happen next, decided in this one place after every answer.
void advance(Self self) {
  auto& s = self->state;
  if (s.failure) {
    if (s.requests_out > 0) return;  // an executor still reads the batch
    s.promise.deliver(s.failure);
    return self->quit(s.failure);
  }
  const bool all_ran = std::all_of(s.ran.begin(), s.ran.end(), [](bool r) { return r; });
  const bool done = s.backward ? s.next_turn == s.ran.size() : all_ran;
  if (done) {
    ++s.messages;  // the answer below
    s.promise.deliver(msg::GraphBatchDone{s.batch, s.messages});
    return;
  }
  if (s.backward && !s.turn_out && s.ran[s.next_turn]) give_turn(self, s.next_turn);
}

GraphBatcherActor::behavior_type graph_batcher(Self self, std::vector<VertexExecutorActor> executors) {
  self->state.executors = std::move(executors);
  self->set_exception_handler(exception_reason);
  return {
      [=](const msg::RunGraphBatch& run) {
        auto& s = self->state;
        require(!s.promise.pending(), "graph batcher: batch {} requested while batch {} runs", run.batch, s.batch);
        require(run.parts >= 1 && run.parts <= s.executors.size(), "graph batcher: {} parts for {} executors",
                run.parts, s.executors.size());
        s.batch = run.batch;
        s.backward = run.backward;
        s.ran.assign(run.parts, false);
        s.next_turn = 0;
        s.turn_out = false;
        s.messages = 1;  // this request
        s.promise = self->make_response_promise<msg::GraphBatchDone>();
        for (std::uint32_t k = 0; k < run.parts; ++k) run_part(self, k);
        return s.promise;
      },
  };
}

}  // namespace

GraphBatcherActor spawn_graph_batcher(caf::actor_system& system, std::vector<VertexExecutorActor> executors) {
  return system.spawn(graph_batcher, std::move(executors));
}

}  // namespace taihu::graph
