#pragma once
// A net's layers as work for the chip's 4 core groups (swCaffe's scheme, P §V-A):
// each group runs its contiguous share of the batch through the model's
// kernels, with real numerics, on the net's own blobs (the shares are
// disjoint); a pass of a layer is one or more phases, each a work item per
// group followed by a core-group sync, with host (MPE) steps between phases:
//
//   BatchNorm forward:  channel_sums per group | MPE adds the 4 groups' sums,
//                       updates the running statistics | channel_affine
//   BatchNorm backward: channel_sums(dy, x) | MPE | channel_affine + eltwise
//   Convolution / InnerProduct backward: weight gradients per group (group 0
//                       into the parameter diff, the others into their own
//                       buffers) | data gradients | CG 0 adds the 3 partials
//
// Thread safety: run(g, ...) for different g may run concurrently (one thread
// per core group: each CoreGroup and its buffers are single-threaded state);
// everything else runs on the caller's thread between phases. Layers without
// device kernels run their own CPU code: with the model's timing-only time
// where layer_timing covers the type (Softmax on the MPE, LRN, Concat,
// Dropout: "host+model"), else without simulated time ("host").
//
// Plain C++; actors/device/core_group_actor.cpp drives it with one actor per
// core group.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/net/net.hpp"
#include "devices/sw26010/chip.hpp"
#include "devices/sw26010/layer_timing.hpp"

namespace taihu::sw26010 {

enum class Pass : std::uint8_t { forward, backward };
// Which figure a phase's time goes to.
enum class Stage : std::uint8_t { forward, data_gradient, weight_gradient };

enum class Placement : std::uint8_t {
  device,          // the layer's kernels on the 4 core groups
  host_modelled,   // the layer's CPU code; time from the model (timing only)
  host,            // the layer's CPU code; no simulated time
};

class NetPlan {
 public:
  // Plans every layer of `net` (whose description gives the layers' options).
  NetPlan(Net& net, const Params& params = Params::defaults());
  ~NetPlan();
  NetPlan(const NetPlan&) = delete;
  NetPlan& operator=(const NetPlan&) = delete;

  const Params& params() const { return params_; }
  Net& net() { return net_; }
  std::size_t num_layers() const { return layers_.size(); }
  Placement placement(std::size_t i) const;
  // "explicit"/"implicit" (convolutions), "MPE", "host", ...
  std::string method(std::size_t i) const;

  // Phases of layer i's pass at the net's current batch (0: nothing on the device).
  int phases(std::size_t i, Pass pass) const;
  Stage stage(std::size_t i, Pass pass, int phase) const;
  // Host (MPE) step before a phase: combines the groups' partial sums of the
  // previous phase, prepares per-pass constants.
  void before_phase(std::size_t i, Pass pass, int phase);
  // Core group g's part of a phase, on its share of the batch. Errors of the
  // model (a layer whose buffers do not fit the LDM: ShapeError) name the
  // layer and the share, here and in before_phase.
  KernelStats run(int g, std::size_t i, Pass pass, int phase);
  // Host step after the last phase.
  void finish(std::size_t i, Pass pass);

  // host_modelled layers: the model's time for group 0's share (the largest).
  LayerTiming modelled_timing(std::size_t i);

  CoreGroup& group(int g) { return *groups_[std::size_t(g)]; }
  // Group g's [begin, end) of the current batch.
  std::pair<std::int64_t, std::int64_t> share(int g) const;

  // The convolution method for a geometry and per-group batch (timed once,
  // as swCaffe does in its first iterations).
  ConvChoice conv_choice(const ConvShape& s, std::int64_t batch, std::int64_t groups);
  // Tests: every convolution that can use `method` does (nullopt: the faster).
  void force_conv_method(std::optional<ConvMethod> method) {
    forced_method_ = method;
    layouts_share_ = -1;
  }
  // Where layer i's bottom 0 and top 0 live at the current batch: inside a run
  // of implicit convolutions, swCaffe's transform layer leaves them in the
  // implicit layout (layout_runs.hpp). The blobs here always hold Caffe's
  // layout (the numerics need it); the kernels still convert, but a
  // conversion the transform layer makes unnecessary is not charged.
  const LayerLayouts& layouts(std::size_t i);

  // Per-layer device state; defined in layer_work.hpp.
  struct LayerWork;

 private:
  Net& net_;
  Params params_;
  std::array<std::unique_ptr<CoreGroup>, Chip::groups> groups_;
  std::array<std::unique_ptr<Scratch>, Chip::groups> scratch_;  // per group, reused layer by layer
  std::map<std::string, ConvChoice> device_choices_;
  std::optional<ConvMethod> forced_method_;
  std::vector<LayerLayouts> layouts_;
  std::int64_t layouts_share_ = -1;  // the per-group batch `layouts_` is for
  std::vector<std::unique_ptr<LayerWork>> layers_;
  // Timing-only model for host_modelled layers.
  std::unique_ptr<CoreGroup> timing_group_;
  Scratch timing_scratch_{false};
  std::map<std::string, ConvChoice> conv_choices_;
};

}  // namespace taihu::sw26010
