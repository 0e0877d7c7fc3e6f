#pragma once
// The ONNX importer's state and steps, private to interop/onnx/
// (onnx_import.hpp is the interface): the graph's plumbing (tensors, values,
// names, layers, the input and the outputs) in onnx_import.cpp, one step per
// operator in onnx_operators.cpp.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "interop/onnx/onnx_import.hpp"

namespace taihu::interop::onnx_in {

using onnx::AttributeProto;
using onnx::GraphProto;
using onnx::NodeProto;
using onnx::TensorProto;

// A tensor the graph holds as data (an initializer, a Constant node's value).
struct Constant {
  std::vector<int64_t> dims;
  std::vector<float> floats;  // FLOAT and DOUBLE tensors
  std::vector<int64_t> ints;  // INT64 and INT32 tensors
  bool integer = false;
  int64_t count() const { return integer ? static_cast<int64_t>(ints.size()) : static_cast<int64_t>(floats.size()); }
};

// A computed value: the blob that holds it and its rank (0 = unknown).
struct Value {
  std::string blob;
  int rank = 0;
};

// A [layer] section as it is written, options in order.
struct LayerText {
  std::string name, type;
  std::vector<std::string> bottoms, tops;
  std::vector<std::pair<std::string, std::string>> options;
  void set(const std::string& key, const std::string& value) {
    for (auto& [k, v] : options)
      if (k == key) return void(v = value);
    options.emplace_back(key, value);
  }
};

// Names that survive taihu's config syntax (no spaces, '#', ';', '[', '/'):
// everything else becomes '_'.
std::string clean_name(const std::string& raw);

// A tensor's values, its size checked against the bytes the file holds
// before anything of that size is allocated.
Constant decode(const TensorProto& t, const std::string& what);

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const std::string& source, const OnnxImportOptions& options);
  ImportedOnnx run();

 private:
  [[noreturn]] void fail(const NodeProto& node, const std::string& why) const;

  // ---- attributes -------------------------------------------------------
  const AttributeProto* attribute(const NodeProto& node, const std::string& name) const;
  int64_t get_int(const NodeProto& node, const std::string& name, int64_t fallback) const;
  float get_float(const NodeProto& node, const std::string& name, float fallback) const;
  std::vector<int64_t> get_ints(const NodeProto& node, const std::string& name, std::vector<int64_t> fallback) const;

  // ---- values -----------------------------------------------------------
  const Constant* constant(const std::string& name) const;
  bool has_input(const NodeProto& node, int k) const { return node.input_size() > k && !node.input(k).empty(); }
  const Value& value(const NodeProto& node, int k) const;
  const Constant& weight(const NodeProto& node, int k, const char* what) const;
  std::string unique(std::set<std::string>& taken, std::string name);

  // ---- layers -----------------------------------------------------------
  LayerText& layer(const NodeProto& node, const std::string& type, std::vector<std::string> bottoms, int rank,
                   const std::string& suffix = "");
  void weights(const LayerText& l, const std::string& suffix, std::vector<int64_t> dims, std::vector<float> values);
  void alias(const NodeProto& node, const Value& v) { values_[node.output(0)] = v; }
  void rename(LayerText& l, const std::string& wanted);
  // Outputs past the first must be unused (a mask, indices, training statistics).
  void only_first_output(const NodeProto& node, const char* what) const;

  // ---- operators (onnx_operators.cpp) ----------------------------------
  void add(const NodeProto& node);
  void constant_node(const NodeProto& node);
  // kernel/stride/pad/dilation as taihu's _h/_w keys, pads symmetric.
  void window(const NodeProto& node, LayerText& l, const std::vector<int64_t>& kernel, bool dilation);
  void conv(const NodeProto& node);
  void inner_product(const NodeProto& node);
  void batch_norm(const NodeProto& node);
  // Per-channel constant: dims that broadcast along axis 1 of a rank-`rank`
  // value (trailing ones, as ONNX aligns from the right), or nothing.
  static bool per_channel(const Constant& c, int rank);
  void eltwise(const NodeProto& node);
  // x * c (per channel) is a Scale; x + c is the bias of the bias-free layer
  // that computed x, when nothing else reads x.
  void constant_operand(const NodeProto& node, const std::string& x_name, const Value& x, const Constant& c);
  void pooling(const NodeProto& node);
  void lrn(const NodeProto& node);
  int64_t axis(const NodeProto& node, int64_t a, int rank) const;
  void concat(const NodeProto& node);
  void softmax(const NodeProto& node);
  void flatten(const NodeProto& node);
  void reshape(const NodeProto& node);
  void dropout(const NodeProto& node);

  // ---- input, outputs, text ---------------------------------------------
  void read_input();
  void finish();
  // The graph's name, unless it is an exporter's default (torch.onnx.export:
  // "torch_jit", "main_graph"): then the file's.
  std::string net_name() const;
  std::string text() const;
  const GraphProto& graph_;
  const std::string source_;
  const OnnxImportOptions& options_;
  int64_t opset_ = 1;
  // Shared: an Identity of an initializer (torch.onnx.export writes dozens)
  // names the same tensor again, without a copy of its values.
  std::map<std::string, std::shared_ptr<const Constant>> constants_;
  std::map<std::string, Value> values_;
  std::map<std::string, int> uses_;
  std::map<std::string, std::size_t> biasless_;  // blob -> the bias-free layer computing it
  std::set<std::string> layer_names_, blob_names_;
  std::vector<LayerText> layers_;
  std::vector<int64_t> input_shape_;
  bool head_ = false;
  std::map<std::string, OnnxWeights> weights_;
  std::vector<std::string> notes_;
};

}  // namespace taihu::interop::onnx_in
