#pragma once
// The layer contract, as in Caffe: a layer is set up once against the shapes
// of its bottom blobs, reshapes its tops whenever input shapes change, and
// computes forward (bottom data -> top data) and backward (top diff -> bottom
// diff and parameter diff). Parameter diffs are accumulated (+=), so the solver
// zeroes them between iterations; bottom diffs are overwritten.

#include <memory>
#include <string>
#include <vector>

#include "core/common/random.hpp"
#include "core/config/config.hpp"
#include "core/tensor/blob.hpp"

namespace taihu {

using BlobVec = std::vector<Blob*>;

enum class Phase { train, test };

// What the net knows about a layer before constructing it.
struct LayerSpec {
  std::string name;
  std::string type;
  std::vector<std::string> bottoms;
  std::vector<std::string> tops;
  // Options of this layer (the [layer NAME] section); layers read what they need.
  const config::Section* options = nullptr;
};

// A parameter blob with its per-parameter solver multipliers. Non-learnable
// parameters (running statistics) are model state: checkpointed and
// broadcast, never updated by the solver.
struct Param {
  std::shared_ptr<Blob> blob;
  std::string name;  // "conv1/weight"
  float lr_mult = 1.0f;
  float decay_mult = 1.0f;
  bool learnable = true;
};

class Layer {
 public:
  explicit Layer(const LayerSpec& spec);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual const char* type() const = 0;

  // Bottom/top counts this layer accepts; checked by the net.
  virtual int min_bottoms() const { return 1; }
  virtual int max_bottoms() const { return 1; }
  virtual int min_tops() const { return 1; }
  virtual int max_tops() const { return 1; }
  // True if top[0] may be the same blob as bottom[0].
  virtual bool supports_in_place() const { return false; }
  // Loss layers contribute loss_weight * top[0] to the objective.
  virtual float default_loss_weight() const { return 0.0f; }
  // Layers whose output has no gradient (accuracy) are skipped in backward.
  virtual bool has_backward() const { return true; }
  // Whether backward reads the values of bottom i and of top t (it always
  // reads the tops' gradients). A net lends a value's storage to other blobs
  // once no later pass reads it (core/net/storage_sharing.hpp), so a layer
  // says false only for a value its backward never reads: the default, true,
  // is always correct and only costs memory.
  virtual bool backward_reads_bottom(size_t i) const { return true; }
  virtual bool backward_reads_top(size_t t) const { return true; }

  // Once: validates bottoms, creates and initialises parameters.
  virtual void setup(const BlobVec& bottom, const BlobVec& top) {}
  // Before each forward: checks bottom shapes, sets top shapes.
  virtual void reshape(const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void forward(const BlobVec& bottom, const BlobVec& top) = 0;
  // propagate_down[i]: whether bottom[i]'s diff is needed.
  virtual void backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                        const BlobVec& bottom) = 0;

  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }

  Phase phase() const { return phase_; }
  void set_phase(Phase phase) { phase_ = phase; }
  Rng& rng() { return rng_; }
  const Rng& rng() const { return rng_; }
  void seed(uint64_t net_seed) { rng_.reseed(derive_seed(net_seed, name_)); }

  // Throws a ShapeError that names this layer and its type.
  [[noreturn]] void shape_error(const std::string& message) const;

 protected:
  // Adds a parameter blob named "<layer>/<suffix>", reading "<suffix>_lr_mult"
  // and "<suffix>_decay_mult" from the options.
  Blob& add_param(const std::string& suffix, const Shape& shape, bool learnable = true);
  const config::Section& options() const { return *options_; }

 private:
  std::string name_;
  const config::Section* options_;
  std::vector<Param> params_;
  Phase phase_ = Phase::train;
  Rng rng_;
};

}  // namespace taihu
