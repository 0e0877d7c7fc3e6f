#pragma once
// A net is a DAG of layers connected by named blobs, described in a config
// document:
//
//   [net]
//   name = lenet
//   [input data]            # one section per input; shape excludes the batch
//   shape = 1 28 28
//   [input label]
//   shape =                 # empty: one value per sample
//   [layer conv1]
//   type = Convolution
//   bottom = data
//   top = conv1
//   num_output = 20
//
// Layers run in file order, which must be a topological order. A blob read by
// several layers gets an automatic Split so that gradients add up; a layer
// whose top equals its bottom works in place. `phase = train|test` restricts a
// layer to one phase; `loss_weight` makes any layer's top[0] part of the loss.
// `fuse = false` in [net] computes every layer on its own (see fusion.hpp).

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/common/task.hpp"
#include "core/config/config.hpp"
#include "core/layers/layer.hpp"
#include "core/net/fusion.hpp"
#include "core/net/layer_executor.hpp"
#include "core/net/net_node.hpp"
#include "core/net/storage_sharing.hpp"

namespace taihu {

class Net {
 public:
  // What a net holds: everything it computes with, or its parameters and the
  // shape of every blob without the blobs' storage (ShapesOnly,
  // core/tensor/tensor.hpp): enough to check a description and to count,
  // fill and save its parameters, at the memory cost of the parameters
  // alone. Such a net cannot run (forward and backward throw).
  enum class Storage { full, parameters_only };

  // Builds every layer and sets it up for `batch` samples.
  Net(std::shared_ptr<const config::Document> description, int64_t batch, uint64_t seed,
      Storage storage = Storage::full);
  ~Net();

  const std::string& name() const { return name_; }
  // The description the net was built from (layer options: section "layer NAME").
  const config::Document& description() const { return *description_; }

  // Runs every layer's forward and backward through `executor` instead of the
  // layer's own code (null: the layers' code); not owned, must outlive its use.
  // An executor runs the layers one by one, fused runs' insides included:
  // those blobs get storage while it is set.
  void set_executor(LayerExecutor* executor);
  LayerExecutor* executor() const { return executor_; }

  // Reshapes the inputs to `batch` samples and every layer after them.
  void set_batch(int64_t batch);
  int64_t batch() const { return batch_; }
  Storage storage() const { return storage_; }
  void set_phase(Phase phase);
  Phase phase() const { return phase_; }

  // Runs the active layers; returns the weighted sum of the losses.
  float forward();
  // Accumulates parameter gradients (call zero_param_diffs first).
  void backward();
  float forward_backward() {
    const float loss = forward();
    backward();
    return loss;
  }

  // The same passes one layer at a time (a training step, profilers):
  // forward() is forward_layer(i) for every i in order, summed; backward()
  // is begin_backward() then backward_layer(i) for every i in reverse order.
  // forward_layer gives layer i's weighted loss (0 when it is inactive);
  // backward_layer whether layer i ran. Tasks (core/common/task.hpp): with
  // an executor installed a layer's pass may wait on a device model's
  // actors; on the CPU they never suspend. forward() and backward() take
  // them with async::sync_wait.
  async::Task<float> forward_layer(size_t i);
  void begin_backward();
  async::Task<bool> backward_layer(size_t i);

  const std::vector<std::string>& input_names() const { return input_names_; }
  // Blobs that no layer reads: losses, accuracies, predictions.
  const std::vector<std::string>& output_names() const { return output_names_; }
  bool has_blob(const std::string& name) const { return blobs_.count(name) != 0; }
  std::vector<std::string> blob_names() const;
  Blob& blob(const std::string& name);
  const Blob& blob(const std::string& name) const;

  size_t num_layers() const { return layers_.size(); }
  Layer& layer(size_t i) { return *layers_[i].layer; }
  const Layer& layer(size_t i) const { return *layers_[i].layer; }
  const BlobVec& layer_bottoms(size_t i) const { return layers_[i].bottom; }
  const BlobVec& layer_tops(size_t i) const { return layers_[i].top; }
  // Which of layer i's bottoms receive a gradient in backward.
  const std::vector<bool>& layer_propagate_down(size_t i) const { return layers_[i].propagate_down; }

  // The runs of layers computed together (core/net/fusion.hpp; `[net] fuse`,
  // default true). Not used while an executor is installed.
  const std::vector<std::unique_ptr<FusedRun>>& fused_runs() const { return fused_runs_; }
  // What sharing storage between blobs saves (storage_sharing.hpp; `[net]
  // share_values` and `share_gradients`, default true): after a pass, only
  // the values of inputs, outputs and kept blobs, and the gradients of
  // parameters, inputs and outputs, are defined; `share_values = false` and
  // `share_gradients = false` keep every blob's.
  const StorageSharing& storage_sharing() const { return storage_sharing_; }
  // Keeps these blobs' values defined after a pass, from the next pass on (for
  // a reader outside the net).
  void keep_values(const std::vector<std::string>& names);
  // Whether a blob's value takes turns with others' (undefined after a pass).
  bool value_shared(const std::string& name) const;

  // Every parameter (learnable and state), in layer order.
  std::vector<Param*> params();
  std::vector<const Param*> params() const;
  std::vector<Param*> learnable_params();
  int64_t num_learnable_parameters() const;
  void zero_param_diffs();

 private:
  using Node = NetNode;

  struct LayerDraft;
  std::vector<LayerDraft> read_layers(const config::Document& doc) const;
  void insert_splits(std::vector<LayerDraft>& drafts) const;
  // The constructor's steps: the [input] sections' blobs; one layer's node,
  // its blobs checked against the layer's contract (`consumed` collects the
  // blobs read); the blobs whose values, and whose gradients, are one tensor.
  void read_inputs(const config::Document& doc);
  Node make_node(const LayerDraft& draft, uint64_t seed, std::set<std::string>& consumed);
  void group_blobs();
  Blob* blob_for(const std::string& name);
  void plan_backward();
  // Storage for the blobs inside fused runs (none unless an executor runs the layers).
  void store_fused_intermediates(bool store);
  // Shares storage between blobs (storage_sharing.hpp; [net] share_values, share_gradients).
  void plan_storage_sharing();
  StepPlan step_plan() const;
  void reshape_all();
  void require_storage() const;

  std::shared_ptr<const config::Document> description_;
  std::string name_;
  int64_t batch_ = 0;
  Storage storage_ = Storage::full;
  Phase phase_ = Phase::train;
  std::vector<std::string> input_names_;
  std::map<std::string, Shape> input_shapes_;  // per sample
  std::vector<std::string> output_names_;
  std::map<std::string, std::shared_ptr<Blob>> blobs_;
  std::vector<Node> layers_;
  std::vector<std::unique_ptr<FusedRun>> fused_runs_;
  std::vector<Blob*> diffs_to_zero_;
  LayerExecutor* executor_ = nullptr;
  bool share_values_ = true, share_gradients_ = true;
  BlobGroups value_groups_, gradient_groups_;             // blobs whose values, whose gradients, are one tensor
  std::set<const Blob*> kept_values_;                     // keep_values
  std::vector<std::pair<Tensor*, const float*>> shared_;  // as planned: each tensor taking turns, its storage
  StorageSharing storage_sharing_;
};

}  // namespace taihu
