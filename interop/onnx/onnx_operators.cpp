// One step per ONNX operator: the taihu layer it becomes (onnx_import.hpp
// lists them), or a refusal saying why it cannot.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/common/excerpt.hpp"
#include "interop/onnx/onnx_importer.hpp"

namespace taihu::interop::onnx_in {

namespace {

std::string number(float v) { return fmt::format("{}", v); }  // shortest form that reads back the same
std::string number(int64_t v) { return std::to_string(v); }

}  // namespace

void Importer::add(const NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    fail(node, fmt::format("operator domain '{}' is not ONNX's standard set", excerpt(node.domain())));
  for (const auto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) fail(node, "control flow (a subgraph attribute) has no taihu layer");
  if (node.output_size() < 1) fail(node, "has no output");
  const std::string& op = node.op_type();
  if (op == "Constant") return constant_node(node);
  if (op == "Identity") {  // of a computed value, or of an initializer (torch.onnx.export writes those)
    if (auto it = has_input(node, 0) ? constants_.find(node.input(0)) : constants_.end(); it != constants_.end())
      return void(constants_[node.output(0)] = it->second);
    return alias(node, value(node, 0));
  }
  if (op == "Conv") return conv(node);
  if (op == "Gemm" || op == "MatMul") return inner_product(node);
  if (op == "BatchNormalization") return batch_norm(node);
  if (op == "Add" || op == "Mul" || op == "Sum" || op == "Max") return eltwise(node);
  if (op == "MaxPool" || op == "AveragePool") return pooling(node);
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    LayerText& l = layer(node, "Pooling", {value(node, 0).blob}, 4);
    l.set("pool", op == "GlobalMaxPool" ? "max" : "ave");
    l.set("global_pooling", "true");
    return;
  }
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh") {
    const Value& x = value(node, 0);
    layer(node, op == "Relu" ? "ReLU" : op == "Tanh" ? "TanH" : "Sigmoid", {x.blob}, x.rank);
    return;
  }
  if (op == "LeakyRelu") {
    const Value& x = value(node, 0);
    layer(node, "ReLU", {x.blob}, x.rank).set("negative_slope", number(get_float(node, "alpha", 0.01f)));
    return;
  }
  if (op == "LRN") return lrn(node);
  if (op == "Concat") return concat(node);
  if (op == "Softmax") return softmax(node);
  if (op == "Flatten") return flatten(node);
  if (op == "Reshape") return reshape(node);
  if (op == "Dropout") return dropout(node);
  fail(node, "taihu has no layer for this operator");
}

void Importer::constant_node(const NodeProto& node) {
  const std::string what = fmt::format("{}: node '{}' (Constant)", source_, excerpt(node.name()));
  if (const auto* a = attribute(node, "value"))
    return void(constants_[node.output(0)] = std::make_shared<const Constant>(decode(a->t(), what)));
  if (const auto* a = attribute(node, "value_ints")) {
    Constant c;
    c.integer = true;
    c.ints.assign(a->ints().begin(), a->ints().end());
    c.dims = {static_cast<int64_t>(c.ints.size())};
    return void(constants_[node.output(0)] = std::make_shared<const Constant>(std::move(c)));
  }
  fail(node, "only `value` and `value_ints` constants are read");
}

// kernel/stride/pad/dilation as taihu's _h/_w keys, pads symmetric.
void Importer::window(const NodeProto& node, LayerText& l, const std::vector<int64_t>& kernel, bool dilation) {
  const std::string auto_pad = attribute(node, "auto_pad") ? attribute(node, "auto_pad")->s() : "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    fail(node, fmt::format("auto_pad = {} is not read: give explicit pads", excerpt(auto_pad)));
  const auto strides = get_ints(node, "strides", {1, 1});
  const auto pads = get_ints(node, "pads", {0, 0, 0, 0});
  const auto dilations = get_ints(node, "dilations", {1, 1});
  if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
    fail(node, "only 2-D windows (NCHW) are read");
  if (pads[0] != pads[2] || pads[1] != pads[3])
    fail(node, fmt::format("asymmetric pads [{}]: taihu pads both sides of an axis alike",
                           fmt::join(pads, ", ")));
  if (!dilation && (dilations[0] != 1 || dilations[1] != 1)) fail(node, "dilated pooling has no taihu layer");
  l.set("kernel_h", number(kernel[0]));
  l.set("kernel_w", number(kernel[1]));
  l.set("stride_h", number(strides[0]));
  l.set("stride_w", number(strides[1]));
  l.set("pad_h", number(pads[0]));
  l.set("pad_w", number(pads[1]));
  if (dilation && (dilations[0] != 1 || dilations[1] != 1)) {
    l.set("dilation_h", number(dilations[0]));
    l.set("dilation_w", number(dilations[1]));
  }
}

void Importer::conv(const NodeProto& node) {
  const Value& x = value(node, 0);
  const Constant& w = weight(node, 1, "weight");
  if (w.dims.size() != 4) fail(node, "only 2-D convolutions (a 4-D weight) are read");
  LayerText& l = layer(node, "Convolution", {x.blob}, 4);
  l.set("num_output", number(w.dims[0]));
  window(node, l, get_ints(node, "kernel_shape", {w.dims[2], w.dims[3]}), true);
  l.set("group", number(get_int(node, "group", 1)));
  weights(l, "weight", w.dims, w.floats);
  if (has_input(node, 2)) {
    const Constant& b = weight(node, 2, "bias");
    if (b.count() != w.dims[0]) fail(node, fmt::format("bias of {} values for {} outputs", b.count(), w.dims[0]));
    weights(l, "bias", {w.dims[0]}, b.floats);
  } else {
    l.set("bias_term", "false");
    biasless_[l.tops[0]] = layers_.size() - 1;
  }
}

void Importer::inner_product(const NodeProto& node) {
  const bool gemm = node.op_type() == "Gemm";
  const Value& x = value(node, 0);
  const Constant& b = weight(node, 1, "weight matrix");
  if (b.dims.size() != 2) fail(node, "the weight must be a matrix");
  if (gemm && get_int(node, "transA", 0) != 0) fail(node, "transA = 1 (a transposed input) has no taihu layer");
  if (x.rank > 2)
    fail(node, fmt::format("a rank-{} input: {} multiplies its last axis, taihu's InnerProduct all but the first "
                           "(flatten it first)",
                           x.rank, node.op_type()));
  const bool trans = gemm && get_int(node, "transB", 0) != 0;
  const float alpha = gemm ? get_float(node, "alpha", 1.0f) : 1.0f;
  const int64_t n = trans ? b.dims[0] : b.dims[1], k = trans ? b.dims[1] : b.dims[0];
  std::vector<float> w(b.floats.size());
  for (int64_t o = 0; o < n; ++o)
    for (int64_t i = 0; i < k; ++i)
      w[static_cast<std::size_t>(o * k + i)] =
          alpha * b.floats[static_cast<std::size_t>(trans ? o * k + i : i * n + o)];
  LayerText& l = layer(node, "InnerProduct", {x.blob}, 2);
  l.set("num_output", number(n));
  weights(l, "weight", {n, k}, std::move(w));
  if (gemm && has_input(node, 2)) {
    const Constant& c = weight(node, 2, "bias");
    const float beta = get_float(node, "beta", 1.0f);
    if (c.count() != n && c.count() != 1) fail(node, fmt::format("bias C of {} values for {} outputs", c.count(), n));
    std::vector<float> bias(static_cast<std::size_t>(n));
    for (int64_t o = 0; o < n; ++o) bias[static_cast<std::size_t>(o)] = beta * c.floats[c.count() == 1 ? 0 : o];
    weights(l, "bias", {n}, std::move(bias));
  } else {
    l.set("bias_term", "false");
    biasless_[l.tops[0]] = layers_.size() - 1;
  }
}

void Importer::batch_norm(const NodeProto& node) {
  if (get_int(node, "training_mode", 0) != 0) fail(node, "training_mode = 1 normalises by batch statistics");
  only_first_output(node, "running statistics");
  const Value& x = value(node, 0);
  const Constant& scale = weight(node, 1, "scale");
  const Constant& bias = weight(node, 2, "bias");
  const Constant& mean = weight(node, 3, "mean");
  const Constant& var = weight(node, 4, "variance");
  const int64_t c = mean.count();
  for (const Constant* t : {&scale, &bias, &var})
    if (t->count() != c) fail(node, fmt::format("its inputs hold {} and {} values per channel", c, t->count()));
  const bool affine = std::any_of(scale.floats.begin(), scale.floats.end(), [](float v) { return v != 1.0f; }) ||
                      std::any_of(bias.floats.begin(), bias.floats.end(), [](float v) { return v != 0.0f; });
  LayerText& bn = layer(node, "BatchNorm", {x.blob}, x.rank, affine ? "_normalize" : "");
  bn.set("eps", number(get_float(node, "epsilon", 1e-5f)));
  bn.set("momentum", number(get_float(node, "momentum", 0.9f)));
  weights(bn, "mean", {c}, mean.floats);
  weights(bn, "variance", {c}, var.floats);
  if (!affine) return;
  const std::string normalized = bn.tops[0];
  LayerText& s = layer(node, "Scale", {normalized}, x.rank);
  s.set("bias_term", "true");
  weights(s, "weight", {c}, scale.floats);
  weights(s, "bias", {c}, bias.floats);
}

// Per-channel constant: dims that broadcast along axis 1 of a rank-`rank`
// value (trailing ones, as ONNX aligns from the right), or nothing.
bool Importer::per_channel(const Constant& c, int rank) {
  if (rank < 2) return false;
  std::vector<int64_t> d = c.dims;
  while (!d.empty() && d.front() == 1 && static_cast<int>(d.size()) > rank - 1) d.erase(d.begin());
  return static_cast<int>(d.size()) == rank - 1 &&
         std::all_of(d.begin() + 1, d.end(), [](int64_t v) { return v == 1; });
}

void Importer::eltwise(const NodeProto& node) {
  const std::string& op = node.op_type();
  std::vector<const Value*> xs;
  std::string x_name;
  const Constant* c = nullptr;
  for (int k = 0; k < node.input_size(); ++k) {
    if (const Constant* found = constant(node.input(k))) {
      if (c || (op != "Add" && op != "Mul")) fail(node, "has a constant operand taihu cannot fold");
      c = found;
    } else {
      xs.push_back(&value(node, k));
      x_name = node.input(k);
    }
  }
  if (c && xs.size() == 1) return constant_operand(node, x_name, *xs[0], *c);
  if (c) fail(node, "has no computed operand");
  if (xs.size() == 1) return alias(node, *xs[0]);
  std::vector<std::string> bottoms;
  for (const Value* x : xs) bottoms.push_back(x->blob);
  LayerText& l = layer(node, "Eltwise", bottoms, xs[0]->rank);
  l.set("operation", op == "Mul" ? "prod" : op == "Max" ? "max" : "sum");
}

// x * c (per channel) is a Scale; x + c is the bias of the bias-free layer
// that computed x, when nothing else reads x.
void Importer::constant_operand(const NodeProto& node, const std::string& x_name, const Value& x, const Constant& c) {
  if (c.integer || !per_channel(c, x.rank))
    fail(node, fmt::format("a constant operand of dims [{}] on a rank-{} value: only per-channel constants fold "
                           "into a layer",
                           fmt::join(c.dims, ", "), x.rank));
  if (node.op_type() == "Mul") {
    LayerText& l = layer(node, "Scale", {x.blob}, x.rank);
    l.set("bias_term", "false");
    weights(l, "weight", {c.count()}, c.floats);
    biasless_[l.tops[0]] = layers_.size() - 1;
    return;
  }
  auto it = biasless_.find(x.blob);
  if (it == biasless_.end() || uses_[x_name] > 1)
    fail(node, "adds a constant to a value that is not the output of a bias-free Conv, Gemm, MatMul or Mul "
               "read by this node alone");
  LayerText& owner = layers_[it->second];
  const int64_t outputs = weights_.at(owner.name + "/weight").dims[0];
  if (c.count() != outputs) fail(node, fmt::format("a bias of {} values for {} channels", c.count(), outputs));
  owner.set("bias_term", "true");
  // A Scale and its bias are one layer, named after the node that completes
  // it (taihu's export writes a Scale as Mul "NAME:scaled", then Add "NAME").
  if (owner.type == "Scale" && !clean_name(node.name()).empty()) rename(owner, clean_name(node.name()));
  weights(owner, "bias", {outputs}, c.floats);
  biasless_.erase(it);
  alias(node, x);
}

void Importer::pooling(const NodeProto& node) {
  only_first_output(node, "argmax indices");
  if (get_int(node, "storage_order", 0) != 0) fail(node, "storage_order = 1 is not read");
  const bool max = node.op_type() == "MaxPool";
  const auto kernel = get_ints(node, "kernel_shape", {});
  LayerText& l = layer(node, "Pooling", {value(node, 0).blob}, 4);
  l.set("pool", max ? "max" : "ave");
  window(node, l, kernel, false);
  if (get_int(node, "ceil_mode", 0) == 0) l.set("round_mode", "floor");
  const auto pads = get_ints(node, "pads", {0, 0, 0, 0});
  if (!max && get_int(node, "count_include_pad", 0) == 0 && std::any_of(pads.begin(), pads.end(), [](int64_t p) {
        return p != 0;
      }))
    fail(node, "count_include_pad = 0 with padding averages over the unpadded window; taihu counts the padding "
               "(Caffe's rule)");
}

void Importer::lrn(const NodeProto& node) {
  const Value& x = value(node, 0);
  LayerText& l = layer(node, "LRN", {x.blob}, x.rank);
  if (!attribute(node, "size")) fail(node, "has no size");
  l.set("local_size", number(get_int(node, "size", 5)));
  l.set("alpha", number(get_float(node, "alpha", 1e-4f)));
  l.set("beta", number(get_float(node, "beta", 0.75f)));
  l.set("k", number(get_float(node, "bias", 1.0f)));
}

int64_t Importer::axis(const NodeProto& node, int64_t a, int rank) const {
  if (a < 0) {
    if (rank == 0) fail(node, "a negative axis on a value of unknown rank");
    a += rank;
  }
  return a;
}

void Importer::concat(const NodeProto& node) {
  std::vector<std::string> bottoms;
  for (int k = 0; k < node.input_size(); ++k) bottoms.push_back(value(node, k).blob);
  const int rank = value(node, 0).rank;
  layer(node, "Concat", bottoms, rank).set("axis", number(axis(node, get_int(node, "axis", 1), rank)));
}

void Importer::softmax(const NodeProto& node) {
  const Value& x = value(node, 0);
  const int64_t a = axis(node, get_int(node, "axis", opset_ >= 13 ? -1 : 1), x.rank);
  // Before opset 13 Softmax flattens from `axis` on: the same as taihu's
  // only when axis is the last one.
  if (opset_ < 13 && a != x.rank - 1) fail(node, "softmax over several axes (opset < 13) has no taihu layer");
  layer(node, "Softmax", {x.blob}, x.rank).set("axis", number(a));
}

void Importer::flatten(const NodeProto& node) {
  const Value& x = value(node, 0);
  if (axis(node, get_int(node, "axis", 1), x.rank) != 1)
    fail(node, "only Flatten at axis 1 (keeping the batch axis) is read");
  layer(node, "Flatten", {x.blob}, 2);
}

void Importer::reshape(const NodeProto& node) {
  const Value& x = value(node, 0);
  const Constant* shape = has_input(node, 1) ? constant(node.input(1)) : nullptr;
  if (!shape || !shape->integer)
    fail(node, "the shape is computed at run time (Shape, Gather, ...): export with constant folding, or "
               "flatten with Flatten");
  if (get_int(node, "allowzero", 0) != 0) fail(node, "allowzero = 1 is not read");
  std::vector<int64_t> dims = shape->ints;
  if (!dims.empty() && dims[0] > 0) {
    notes_.push_back(fmt::format("node '{}' (Reshape): its fixed batch extent {} became 0 (keep the batch)",
                                 node.name(), dims[0]));
    dims[0] = 0;
  }
  layer(node, "Reshape", {x.blob}, static_cast<int>(dims.size())).set("shape", fmt::format("{}", fmt::join(dims, " ")));
}

void Importer::dropout(const NodeProto& node) {
  only_first_output(node, "the mask");
  const Value& x = value(node, 0);
  float ratio = get_float(node, "ratio", 0.5f);
  if (has_input(node, 1)) {
    const Constant* r = constant(node.input(1));
    if (!r || r->integer || r->count() != 1) fail(node, "its ratio must be a float constant");
    ratio = r->floats[0];
  }
  layer(node, "Dropout", {x.blob}, x.rank).set("dropout_ratio", number(ratio));
}

}  // namespace taihu::interop::onnx_in
