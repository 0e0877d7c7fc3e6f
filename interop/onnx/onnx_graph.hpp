#pragma once
// Small helpers for writing an ONNX graph (onnx.proto): nodes with their
// attributes, float and int64 initializers, typed inputs and outputs.

#include <cstdint>
#include <string>
#include <vector>

#include "interop/onnx/onnx.pb.h"

namespace taihu::onnx_out {

using taihu::onnx::GraphProto;
using taihu::onnx::NodeProto;

class GraphWriter {
 public:
  explicit GraphWriter(GraphProto* graph) : graph_(graph) {}

  NodeProto& node(const std::string& op_type, const std::string& name, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs);
  static void attribute(NodeProto& node, const std::string& name, int64_t value);
  static void attribute(NodeProto& node, const std::string& name, float value);
  static void attribute(NodeProto& node, const std::string& name, const std::vector<int64_t>& values);

  // Initializers; each returns its name.
  std::string floats(const std::string& name, const std::vector<int64_t>& dims, const float* values);
  std::string floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    return floats(name, dims, values.data());
  }
  std::string int64s(const std::string& name, const std::vector<int64_t>& values);

  // A float tensor value; dimension 0 is the symbolic batch "N".
  void input(const std::string& name, const std::vector<int64_t>& dims);
  void output(const std::string& name, const std::vector<int64_t>& dims);

 private:
  GraphProto* graph_;
};

}  // namespace taihu::onnx_out
