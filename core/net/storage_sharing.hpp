#pragma once
// Storage shared by a net's tensors whose contents are never needed at the
// same time (Net; `[net] share_values` and `share_gradients`, both on by
// default).
//
// A training step is a timeline of 2L steps for L layers: the forwards in
// layer order, then the backwards in reverse. A layer of a fused run computes
// at the run's first layer forward and at its last layer backward
// (fusion.hpp), where the run reads and writes its blobs at once.
//
// - A blob's value lives from the forward that writes it to the last step that
//   reads it: a later layer's forward, or a backward that reads it
//   (Layer::backward_reads_bottom / _top, FusedRun::backward_reads). Values no
//   backward reads die in forward: in ResNet-50 the two branches that only the
//   residual sum reads, 0.9 GB at batch 32.
// - A blob's gradient lives inside backward: from its reader's backward (met
//   first) down to its producer's. Caffe keeps every blob's for the whole run;
//   ResNet-50's at batch 32 hold 4.9 GB.
//
// Tensors whose lifetimes do not overlap take turns in one buffer, assigned
// greedily in timeline order, so a value that died in forward, or that
// backward has passed, lends its storage to the gradients that follow. Blobs
// whose data (or gradients) are one tensor move as one: views, a Split's tops.
// Kept tensors have their own storage: those someone sees outside the step.
//
// After a pass, a shared value or gradient is undefined (it holds a later
// tensor's); parameters are never shared.
//
// Plain C++, no actors.

#include <cstddef>
#include <limits>
#include <set>
#include <vector>

#include "core/net/net_node.hpp"

namespace taihu {

struct StorageSharing {
  std::size_t values = 0;       // blobs whose values take turns in the arena
  std::size_t gradients = 0;    // blobs whose gradients do
  double floats_before = 0.0;   // of those tensors, each its own
  double floats_after = 0.0;    // the arena's
  double floats_at_once = 0.0;  // the most they hold at one step: the least any arena could be
};

// Where each layer computes on the timeline, and which values its backward
// reads. `none`: the layer has no backward.
struct StepPlan {
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> forward;                      // step of layer i's forward (i, or its fused run's first)
  std::vector<std::size_t> backward;                     // 2L-1-j, j: i or its fused run's last; none
  std::vector<std::vector<const Blob*>> backward_reads;  // values read at backward[i]
};

// Blobs whose values (or whose gradients) are one tensor, each blob in
// exactly one group: a blob with its views, and for values a Split's tops.
using BlobGroups = std::vector<std::vector<Blob*>>;

struct SharingRequest {
  const std::vector<NetNode>* nodes = nullptr;
  StepPlan steps;
  const BlobGroups* value_groups = nullptr;     // every blob of the nodes
  const BlobGroups* gradient_groups = nullptr;  // likewise
  bool share_values = true, share_gradients = true;  // false: each keeps its own
  std::set<const Blob*> keep_values, keep_gradients;
  std::set<const Blob*> storage_less;  // fused runs' insides: no value, no gradient
};

// Gives every value and gradient of the groups storage, but a fused run's
// inside's (which hold none): kept, untouched and unshared ones their own
// where they have none, the others a turn in a new arena. Fills `shared` with
// the tensors that take turns, for the net to check after reshapes. Tensors
// that had a turn in an earlier arena are to be released first
// (Tensor::release_storage), so that two arenas never coexist.
StorageSharing share_storage(const SharingRequest& request, std::vector<Tensor*>& shared);

}  // namespace taihu
