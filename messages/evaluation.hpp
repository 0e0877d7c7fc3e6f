#pragma once
// A replica's evaluation (core/train/replica.hpp) as the answer to eval_atom:
// the core types travel as they are, with their inspect functions here.

#include <caf/meta/type_name.hpp>

#include "core/train/replica.hpp"

namespace taihu {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Scores& x) {
  return f(caf::meta::type_name("taihu::Scores"), x.loss, x.accuracy, x.root_accuracy, x.perplexity);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ReplicaEvaluation& x) {
  return f(caf::meta::type_name("taihu::ReplicaEvaluation"), x.has_dev, x.dev, x.test);
}

}  // namespace taihu
