#pragma once
// Whole layers on one core group: maps a layer (its type, config options and
// shapes) onto the model's kernels and returns the simulated forward and
// backward cycles for the samples this group holds. With cg.numerics() the
// kernels also compute, on scratch buffers (this measures host speed; the
// layer's own numerics are the caller's, through the kernels directly).
// Used by bench_sw26010_nets; meant for a device=sw26010 report per layer.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/tensor/shape.hpp"
#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/layout_runs.hpp"

namespace taihu::sw26010 {

// Main-memory scratch: zeroed storage with numerics, one aligned dummy address
// without (timing-only kernels never touch data).
class Scratch {
 public:
  explicit Scratch(bool real) : real_(real) {}
  float* get(int slot, std::int64_t floats);

 private:
  bool real_;
  std::map<int, AlignedVector<float>> slots_;
};

struct LayerShape {
  std::string type;                          // "Convolution", "ReLU", ...
  const config::Section* options = nullptr;  // the layer's section (may be null)
  std::vector<Shape> bottoms, tops;          // batch axis = the samples on this core group
  bool propagate_down = true;                // whether bottom 0 needs a gradient
  std::string name;                          // the layer's, for errors (may be empty)
  // Where bottom 0 and top 0 live: an implicit convolution converts only what
  // is not already in its layout (swCaffe's transform layer, layout_runs.hpp).
  LayerLayouts layouts;
};

struct LayerTiming {
  std::string method;  // "explicit"/"implicit" for convolutions, "MPE" for softmax
  std::int64_t forward = 0, backward = 0;
  bool simulated = true;  // false: no device work (Accuracy, Flatten, ...)
};

// Each simulated layer ends with the core groups' Simple_Sync (forward and backward).
// `cache` remembers convolution method choices by geometry. A layer the
// kernels cannot lay out in LDM at these shapes is a ShapeError naming the
// layer, the images on the core group, the kernel, its buffers and their sizes.
LayerTiming time_layer(CoreGroup& cg, const LayerShape& layer, Scratch& scratch,
                       std::map<std::string, ConvChoice>* cache = nullptr);

// The methods time_layer runs a Convolution layer with (cached by geometry).
ConvChoice conv_layer_choice(const Params& params, const LayerShape& layer,
                             std::map<std::string, ConvChoice>* cache = nullptr);

// The layers of `net` as time_layer takes them, with `samples` per core group,
// and the layouts swCaffe's transform layer leaves between them (the methods
// as conv_layer_choice picks them, through `cache`).
std::vector<LayerShape> net_layer_shapes(const Net& net, std::int64_t samples, const Params& params,
                                         std::map<std::string, ConvChoice>* cache = nullptr);

// One training iteration of `net` (train phase, shapes per sample) on one
// chip, timing only: each core group runs `samples` (the largest quarter of
// the batch) layer by layer, then core group 0's MPE sums the other groups'
// weight gradients and the SGD step runs (iteration.hpp). Seconds.
double iteration_seconds(const Net& net, std::int64_t samples, const Params& params);

}  // namespace taihu::sw26010
