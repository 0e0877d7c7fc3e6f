#pragma once
// Iteration control between the coordinator and the workers: Step starts an
// iteration on a worker (it carries no tensors); StepDone reports it finished
// (all its buckets reduced and applied).

#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace taihu::msg {

struct Step {
  std::uint64_t iteration = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Step& x) {
  return f(caf::meta::type_name("taihu::msg::Step"), x.iteration);
}

// Where a worker's time went in one iteration (seconds) and what it did.
struct StepStats {
  double forward_seconds = 0;
  double backward_seconds = 0;
  double update_seconds = 0;
  // Backward finished -> last bucket reduced: communication not hidden.
  double exposed_comm_seconds = 0;
  std::uint64_t samples = 0;
  std::uint64_t vertices = 0;  // of the input graphs (dynamic models)
  // Buckets' collectives, from GradientReady sent to reduced, summed; and the
  // part of that which ran while backward was still computing.
  double comm_seconds = 0;
  double hidden_comm_seconds = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepStats& x) {
  return f(caf::meta::type_name("taihu::msg::StepStats"), x.forward_seconds, x.backward_seconds, x.update_seconds,
           x.exposed_comm_seconds, x.samples, x.vertices, x.comm_seconds, x.hidden_comm_seconds);
}

struct StepDone {
  std::uint64_t iteration = 0;
  std::int32_t rank = 0;
  float loss = 0;
  StepStats stats;
};

// On the wire the loss goes as its bits: CAF 0.17's portable float encoding
// does not keep NaN and infinity, and a NaN loss must stop training on a
// coordinator in another process too (step.cpp).
caf::error inspect(caf::serializer& f, StepDone& x);
caf::error inspect(caf::deserializer& f, StepDone& x);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepDone& x) {
  return f(caf::meta::type_name("taihu::msg::StepDone"), x.iteration, x.rank, x.loss, x.stats);
}

}  // namespace taihu::msg
