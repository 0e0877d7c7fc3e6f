#pragma once
// Runs of consecutive layers that a net computes in one pass over memory per
// direction instead of one pass per layer: the memory-bound layers between
// the convolutions of ResNet-style nets.
//
//   BatchNorm -> Scale -> ReLU, BatchNorm -> Scale, BatchNorm -> ReLU
//     (per channel, on N x C x spatial blobs; BatchNormLayer::Epilogue)
//   Eltwise (sum) -> ReLU with a slope >= 0
//
// A run is fused only where nothing outside it can tell: each intermediate
// blob is read by the next layer of the run alone (a blob version with
// several readers gets a Split, so it never is), no layer of it has a loss
// weight, all run in the same phases, and backward runs for the last layer
// whenever it runs for any. Then every blob read after the run, every
// parameter diff and every state equals what the layers compute one by one,
// bit for bit: the fused kernels evaluate the same expressions in the same
// order. Only the intermediate blobs are not written, and so they hold no
// memory (Net keeps them shapes only; in ResNet-50, BatchNorm's outputs: a
// quarter of the activations and their diffs); `[net] fuse = false` keeps
// them for whoever wants to look at them.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/net/net_node.hpp"

namespace taihu {

class FusedRun {
 public:
  FusedRun(size_t first, size_t last) : first_(first), last_(last) {}
  virtual ~FusedRun() = default;
  // Layers [first, last] of the net.
  size_t first() const { return first_; }
  size_t last() const { return last_; }
  // The layer types joined by '+', e.g. "BatchNorm+Scale+ReLU".
  virtual std::string kind() const = 0;
  // The blobs inside the run: tops of its layers other than the run's output,
  // which the fused passes neither write nor read.
  const std::vector<Blob*>& intermediates() const { return intermediates_; }
  void set_intermediates(std::vector<Blob*> blobs) { intermediates_ = std::move(blobs); }
  // The run's forward (every layer of it reshaped) and backward (when the
  // net runs the last layer's backward).
  virtual void forward() = 0;
  virtual void backward() = 0;
  // The values its backward reads, instead of what its layers' own backward
  // would (Layer::backward_reads_bottom / _top; core/net/storage_sharing.hpp).
  virtual std::vector<const Blob*> backward_reads() const = 0;

 private:
  size_t first_, last_;
  std::vector<Blob*> intermediates_;
};

// The runs found in `nodes` (in order; none overlap), each node's fused_run
// set to its run's index. The nodes must outlive the runs and not move.
std::vector<std::unique_ptr<FusedRun>> fuse_runs(std::vector<NetNode>& nodes);

// Before the layers set up (no shapes yet): every blob that a run found by
// fuse_runs could hold inside (a superset of the runs' intermediates), so
// that a net need not allocate them first.
std::vector<Blob*> possible_intermediates(const std::vector<NetNode>& nodes);

// "12 BatchNorm+Scale+ReLU, 4 Eltwise+ReLU" (or "none"), for logs and reports.
std::string describe_fused_runs(const std::vector<std::unique_ptr<FusedRun>>& runs);

}  // namespace taihu
