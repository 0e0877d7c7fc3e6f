#pragma once
// Gradient buffers shared by blobs whose gradients are never needed at the
// same time (Net, `[net] share_gradients`, on by default).
//
// A blob's gradient lives only inside backward: from the step that first
// writes it (its reader's backward, which runs first since backward goes from
// the last layer to the first) down to the step that last reads it (its
// producer's). Caffe gives every blob its own gradient for the whole run;
// ResNet-50's at batch 32 hold 4.9 GB. Here blobs whose lifetimes do not
// overlap take turns in one buffer, assigned greedily in backward order, so a
// net's gradients take about what its widest point in backward needs.
//
// The steps are the net's: a layer of a fused run does its backward at the
// run's last layer (fusion.hpp), where the run reads its output's gradient and
// writes its input's at once, so both are live there. Blobs whose gradients
// are one tensor (Flatten and Reshape views) move as one. Blobs in `keep`
// keep their own gradient: those someone sees outside backward. A net holds
// the gradients back (shape only) while its layers set up, so that they are
// never all allocated at once: this gives each its storage.
//
// After backward, the gradient of a shared blob is undefined (it holds a
// later blob's); parameters' gradients are never shared.
//
// Plain C++, no actors.

#include <cstddef>
#include <set>
#include <vector>

#include "core/net/net_node.hpp"

namespace taihu {

struct GradientSharing {
  std::size_t blobs = 0;    // blobs whose gradients take turns in the buffers
  std::size_t buffers = 0;  // the buffers they share
  double floats_before = 0.0, floats_after = 0.0;  // of those blobs' gradients
};

// `step[i]`: where layer i does its backward (its own index, or its fused
// run's last layer), for every layer whose backward runs; `groups`: blobs
// whose gradients are one tensor, each blob in exactly one group (singletons
// included). Gives every gradient storage but a fused run's inside's: kept
// and untouched ones their own where they have none, the others a turn in a
// shared buffer.
GradientSharing share_gradients(const std::vector<NetNode>& nodes, const std::vector<std::size_t>& step,
                                const std::vector<std::vector<Blob*>>& groups, const std::set<const Blob*>& keep);

}  // namespace taihu
