#pragma once
// Per-layer compression policy (reference §2.7): small tensors and vectors go
// dense, large ones sparse, by a size cut-off or a cost hook; per-layer
// sections override the defaults.
//
//   [compress]                 # defaults for every parameter
//   method = bsearch           # none | dense | fp16 | topk | trimmed | bsearch | dgc | randomk
//   density = 0.001
//   min_elements = 32768       # smaller tensors go dense (128 KB of fp32)
//   rule = size                # size | bandwidth (also dense unless d·P·s/8 < 1, reference §3.2)
//   warmup_iterations = 0      # dense first (RedSync)
//   ramp_stages = 0            # then DGC's geometric density ramp,
//   ramp_iterations = 0        #   this many iterations per stage
//   quantize = false           # ASQ: indices + one mean (never the output layer)
//   reuse_interval = 0         # bsearch: re-search every N iterations (not with quantize)
//   bsearch_eps = 1e-4
//   error_feedback = true
//   momentum = 0               # > 0: momentum correction here; the solver then uses 0
//   nesterov = false
//   momentum_masking = true
//   clip_norm = 0              # DGC local clipping at clip_norm / sqrt(workers)
//   seed = 0
//   [compress fc8]             # per-layer overrides (the size rule still applies)
//   method = bsearch
//   [compress conv1/weight]    # per-parameter: exactly this, no size rule
//   method = dense
//
// method = none turns compression off: choose() answers Method::dense for
// everything, and enabled() is false, so the caller can keep plain allreduce.

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/compress/compressor.hpp"
#include "core/config/config.hpp"

namespace taihu::compress {

struct LayerInfo {
  std::string name;       // parameter name, "fc6/weight"
  std::size_t elements = 0;
  int dims = 2;           // tensor rank; vectors (biases, BN) go dense
  bool output = false;    // the net's output layer: never quantized
};

class Policy {
 public:
  // true = compress this tensor (sparse); false = dense.
  using CostHook = std::function<bool(const LayerInfo& layer, const Options& options, int workers)>;

  Policy() = default;
  // Reads [compress] and every [compress NAME]; config errors (bad values,
  // unknown keys) name file:line:key.
  static Policy from_config(const config::Document& doc);
  static Policy from_sections(const config::Section& base, std::vector<const config::Section*> overrides);

  bool enabled() const { return enabled_; }
  Options choose(const LayerInfo& layer, int workers) const;
  // Replaces the size/bandwidth rule (e.g. with a prediction from actors/sync/cost_model).
  void set_cost_hook(CostHook hook) { hook_ = std::move(hook); }

  const Options& defaults() const { return base_; }
  std::size_t min_elements() const { return min_elements_; }

 private:
  bool enabled_ = false;
  Options base_;
  std::size_t min_elements_ = 32768;
  bool bandwidth_rule_ = false;
  std::map<std::string, Options, std::less<>> overrides_;
  CostHook hook_;
};

// Reads the option keys above from one section, starting from `defaults`.
Options read_options(const config::Section& section, const Options& defaults, bool& enabled);

// Segments for a bucket whose parameters are `layers`, laid out in this order;
// adjacent dense ones are merged into one segment.
std::vector<Segment> plan_segments(const Policy& policy, std::span<const LayerInfo> layers, int workers);

// Bytes on the wire per worker and iteration (reference §3.2):
// ring allreduce 2(P-1)/P·4n; allgather of k entries of s bytes (P-1)·k·s.
double ring_allreduce_bytes(double elements, int workers);
double sparse_allgather_bytes(double entries, double bytes_per_entry, int workers);

}  // namespace taihu::compress
