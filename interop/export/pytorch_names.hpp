#pragma once
// A net's parameters under the names PyTorch's state_dict gives the same
// modules: "<layer>.weight" and "<layer>.bias" for Convolution (Conv2d),
// InnerProduct (Linear) and Scale; a BatchNorm's statistics as
// "<layer>.running_mean" and "<layer>.running_var", and the Scale layer that
// directly follows it (Caffe's split of BatchNorm2d's affine part) as that
// BatchNorm's "weight" and "bias" (a bias of zeros when the Scale has none).
// '/' and '.' in layer names (GoogLeNet's "inception_3a/1x1") become '_', as
// '.' separates modules in PyTorch. BatchNorm's num_batches_tracked is not
// written: load with strict=False, or add it.

#include <vector>

#include "core/net/net.hpp"
#include "interop/npz/npz_writer.hpp"

namespace taihu::interop {

std::vector<npz::Array> pytorch_state(const Net& net);

// A layer name as a PyTorch module name.
std::string pytorch_module_name(const std::string& layer);

}  // namespace taihu::interop
