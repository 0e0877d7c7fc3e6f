#pragma once
// Solvers update learnable parameters from their accumulated gradients.
//
//   [solver]
//   type = sgd | nesterov | adam | adamw | lars
//   base_lr = 0.01
//   momentum = 0.9
//   weight_decay = 5e-4
//   lr_policy = fixed | step | multistep | poly | cosine   (+ warmup_iters)
//   clip_gradients = 10     # global L2 norm; 0 disables
//
// A solver's whole state (iteration and per-parameter history such as
// momentum or Adam moments) is exposed as named tensors so that checkpoints
// can store and restore it generically.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/layers/layer.hpp"

namespace taihu {

class Solver {
 public:
  virtual ~Solver() = default;

  // Builds the solver named by `type` in the section; reads all its keys.
  static std::unique_ptr<Solver> create(const config::Section& options, std::vector<Param*> params);

  // One update from the params' diffs; advances the iteration counter.
  virtual void step() = 0;
  // Learning rate the next step() will use.
  virtual float learning_rate() const = 0;

  int64_t iteration() const { return iteration_; }
  void set_iteration(int64_t iteration) { iteration_ = iteration; }

  // Per-parameter history tensors, in a stable order, for checkpoints.
  virtual std::vector<std::pair<std::string, Tensor*>> state() = 0;

 protected:
  int64_t iteration_ = 0;
};

}  // namespace taihu
