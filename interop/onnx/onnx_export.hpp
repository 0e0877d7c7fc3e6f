#pragma once
// A trained net as an ONNX model: its inference graph (the test phase, with
// losses and accuracies left out; their score inputs become the graph's
// outputs) and its parameters as initializers. ONNX opset 13, IR version 7,
// which Debian 12's onnx 1.12 and current runtimes read. The batch axis is
// symbolic ("N").
//
// Layers map to ONNX operators with Caffe's semantics kept: Pooling's
// rounding picks ceil_mode from the sizes taihu computes, average pooling
// counts padding as Caffe does, BatchNorm uses its running statistics, Scale
// is Mul (+ Add) broadcast over the channel axis, Dropout is the identity.
// A layer or setting with no faithful ONNX form (LRN within a channel, a
// Scale with two bottoms, a Reshape of the batch axis, ...) is a ConfigError
// naming it.

#include "core/net/net.hpp"
#include "interop/onnx/onnx.pb.h"

namespace taihu::interop {

// `net` in the test phase, at 2 samples per batch (so that the batch axis
// can be told from the others), with its trained parameters.
taihu::onnx::ModelProto export_onnx(const Net& net);

// The net's inference outputs (as in the ONNX graph): blobs no kept layer
// reads, where losses and accuracies are not kept.
std::vector<std::string> inference_outputs(const Net& net);

}  // namespace taihu::interop
