#pragma once
// One layer's work in a NetPlan (private to devices/sw26010): the base every
// layer type's work derives from, and the factories that pick a layer type's.
// A pass of a layer is `phases(pass)` phases; each runs per core group on the
// group's share of the batch (`run`), with MPE steps between phases (`before`,
// `finish`). The types: weighted_work.cpp (Convolution, InnerProduct) and
// layer_work.cpp (the rest).

#include <cstdint>
#include <memory>
#include <string>

#include "devices/sw26010/net_plan.hpp"

namespace taihu::sw26010 {

struct NetPlan::LayerWork {
  // Per-group main-memory buffers, shared by all layers of the group (layers
  // run one at a time).
  enum Slot : int { col_slot = 0, hcwn_in_slot, hcwn_out_slot, weight_partial_slot, bias_partial_slot };

  NetPlan* plan = nullptr;
  std::size_t index = 0;
  Placement placement = Placement::device;
  std::string method;
  std::int64_t modelled_batch = -1;  // host_modelled: the share `modelled` is for
  LayerTiming modelled;

  virtual ~LayerWork() = default;
  virtual int phases(Pass) const { return 0; }
  virtual Stage stage(Pass pass, int) const { return pass == Pass::forward ? Stage::forward : Stage::data_gradient; }
  // A phase that only core group 0 runs (the weight-gradient sum).
  virtual bool group0_only(Pass, int) const { return false; }
  virtual void before(Pass, int) {}
  virtual KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int phase) { return {}; }
  virtual void finish(Pass) {}
  // Every pass on the device in the implicit layout (layout_runs.hpp).
  virtual bool implicit_throughout() const { return false; }

  Net& net() const { return plan->net(); }
  Layer& layer() const { return net().layer(index); }
  const BlobVec& bottom() const { return net().layer_bottoms(index); }
  const BlobVec& top() const { return net().layer_tops(index); }
  bool down(std::size_t k) const {
    const auto& p = net().layer_propagate_down(index);
    return k < p.size() && p[k];
  }
  const config::Section* options() const { return net().description().find("layer", layer().name()); }
  Scratch& scratch(int g) const { return *plan->scratch_[std::size_t(g)]; }
  CoreGroup& cg(int g) const { return plan->group(g); }
  std::int64_t largest_share() const { return (net().batch() + Chip::groups - 1) / Chip::groups; }
  // Whether group g works this pass (its share of the batch is not empty).
  bool active(int g) const { return plan->share(g).second > plan->share(g).first; }

  static void add_to(KernelStats& total, const KernelStats& s) {
    if (total.kernel.empty()) total.kernel = s.kernel;
    total += s;
  }
  static std::int64_t per_sample(const Blob& b) {
    const Shape& s = b.shape();
    return s.rank() == 0 || s[0] == 0 ? s.count() : s.count() / s[0];
  }
};

// Layer i's device work, or null where the layer runs on the host: `why` then
// says why a type with device kernels falls back (empty where the type has none).
std::unique_ptr<NetPlan::LayerWork> make_layer_work(NetPlan& plan, std::size_t i, std::string& why);
// The two weighted types' (weighted_work.cpp), with the same contract.
std::unique_ptr<NetPlan::LayerWork> make_convolution_work(NetPlan& plan, std::size_t i, std::string& why);
std::unique_ptr<NetPlan::LayerWork> make_inner_product_work(NetPlan& plan, std::size_t i, std::string& why);

}  // namespace taihu::sw26010
