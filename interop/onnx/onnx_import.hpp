#pragma once
// An ONNX model as a taihu net config (the format of config/nets/*.ini) and
// a checkpoint of its weights: CNN inference graphs as torch.onnx.export and
// taihu's own export (onnx_export.hpp) write them.
//
//   Conv (2-D; symmetric pads)                 -> Convolution
//   Gemm, MatMul with a constant matrix, on a
//     matrix (Flatten first, as exports do)    -> InnerProduct (alpha, beta and
//                                                 transB folded into the weights)
//   BatchNormalization                         -> BatchNorm (+ Scale for a scale or
//                                                 bias that is not 1 / 0)
//   Mul by a per-channel constant              -> Scale
//   Add of a constant after a bias-free Conv,
//     InnerProduct or Scale                    -> that layer's bias
//   Add, Sum, Mul, Max of computed values      -> Eltwise
//   MaxPool, AveragePool (ceil_mode, symmetric
//     pads; padded averages count the padding) -> Pooling (round_mode)
//   GlobalAveragePool, GlobalMaxPool           -> Pooling global_pooling
//   Relu, LeakyRelu, Sigmoid, Tanh, LRN, Concat, Softmax, Flatten (axis 1),
//   Reshape (constant shape), Dropout          -> the layer of that name
//   Identity, Constant                         -> nothing (an alias, a constant)
//
// The one graph input that is not an initializer becomes blob `data` (the
// trainer's default data blob). With `training_head`, a graph with one
// output of rank 2 also gets what training needs: an input `label`, a
// SoftmaxWithLoss and an Accuracy on the logits (the input of a final
// Softmax, which then runs only when testing).
//
// Anything else is a ConfigError naming the node, its operator and why
// (taihu-convert exits 2): an operator taihu has no layer for, an attribute
// it cannot honour, control flow, external data, a graph that uses a value
// before it is computed (a cycle). Tensor sizes are checked against the bytes
// the file holds before anything is allocated.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "core/train/checkpoint.hpp"
#include "interop/onnx/onnx.pb.h"

namespace taihu::interop {

struct OnnxImportOptions {
  bool training_head = true;
  // Per-sample shapes of inputs (no batch axis) the file leaves symbolic.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

struct OnnxWeights {
  std::vector<int64_t> dims;
  std::vector<float> values;
};

struct ImportedOnnx {
  config::Document description;                // [net], [input ...], [layer ...]
  std::map<std::string, OnnxWeights> weights;  // by taihu parameter name, "conv1/weight"
  std::vector<std::string> notes;              // what was adapted, for the user
};

// Reads and parses an ONNX file; ConfigError naming the file when it is not
// one (truncated, not protobuf, no graph).
onnx::ModelProto read_onnx(const std::filesystem::path& path);

ImportedOnnx import_onnx(const onnx::ModelProto& model, const std::string& source,
                         const OnnxImportOptions& options = {});

// Copies the weights into `net` (built from `imported.description` with
// `seed`) and returns them as a checkpoint of iteration 0; a parameter the
// net has and the weights lack, or of another size, is a ConfigError.
Checkpoint onnx_checkpoint(const ImportedOnnx& imported, Net& net, uint64_t seed);

}  // namespace taihu::interop
