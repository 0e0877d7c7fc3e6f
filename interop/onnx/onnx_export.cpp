#include "interop/onnx/onnx_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/common/error.hpp"
#include "core/layers/convolution.hpp"
#include "core/layers/window_options.hpp"
#include "interop/onnx/onnx_graph.hpp"

namespace taihu::interop {

namespace {

using onnx_out::GraphWriter;
using taihu::onnx::NodeProto;

constexpr int64_t opset = 13;
constexpr int64_t ir_version = 7;

bool kept(const Net& net, size_t i) {
  const std::string type = net.layer(i).type();
  if (type == "SoftmaxWithLoss" || type == "Accuracy") return false;
  const config::Section* s = net.description().find("layer", net.layer(i).name());
  return !s || s->get_or<std::string>("phase", "both") != "train";
}

class Exporter {
 public:
  Exporter(const Net& net, taihu::onnx::GraphProto* graph) : net_(net), graph_(graph) {}

  void run() {
    for (const auto& name : net_.input_names()) value_[&net_.blob(name)] = name;
    for (size_t i = 0; i < net_.num_layers(); ++i)
      if (kept(net_, i)) add_layer(i);
    for (const auto& name : net_.input_names())
      if (used_.count(name)) graph_.input(name, net_.blob(name).shape().dims());
    for (const auto& name : inference_outputs(net_)) {
      const Blob& blob = net_.blob(name);
      graph_.output(value_.at(&blob), blob.shape().dims());
    }
  }

 private:
  [[noreturn]] void fail(size_t i, const std::string& message) const {
    throw ConfigError(fmt::format("ONNX export: layer '{}' ({}): {}", net_.layer(i).name(), net_.layer(i).type(),
                                  message));
  }

  const config::Section& options(size_t i) const { return net_.description().section("layer", net_.layer(i).name()); }

  // The value of bottom k, which a node reads (`consumed`) or an alias passes on.
  std::string in(size_t i, size_t k, bool consumed = true) {
    const Blob* b = net_.layer_bottoms(i)[k];
    auto it = value_.find(b);
    if (it == value_.end()) fail(i, "reads a blob that only the training phase computes");
    if (consumed) used_.insert(it->second);
    return it->second;
  }

  // The ONNX value each top becomes: named after the layer (in-place layers
  // write new values, as ONNX values are written once).
  std::string out(size_t i, size_t k) {
    const std::string name = k == 0 ? net_.layer(i).name() : fmt::format("{}:{}", net_.layer(i).name(), k);
    value_[net_.layer_tops(i)[k]] = name;
    return name;
  }

  std::string param(size_t i, size_t p) {
    const Param& param = net_.layer(i).params()[p];
    const Tensor& t = param.blob->data();
    return graph_.floats(param.name, t.shape().dims(), t.ptr());
  }

  NodeProto& node(size_t i, const std::string& op, const std::vector<std::string>& inputs) {
    return graph_.node(op, net_.layer(i).name(), inputs, {out(i, 0)});
  }

  const Shape& bottom_shape(size_t i) const { return net_.layer_bottoms(i)[0]->shape(); }
  const Shape& top_shape(size_t i) const { return net_.layer_tops(i)[0]->shape(); }

  void add_layer(size_t i) {
    const std::string type = net_.layer(i).type();
    if (type == "Convolution") return convolution(i);
    if (type == "Pooling") return pooling(i);
    if (type == "InnerProduct") return inner_product(i);
    if (type == "BatchNorm") return batch_norm(i);
    if (type == "Scale") return scale(i);
    if (type == "Eltwise") return eltwise(i);
    if (type == "Split" || type == "Dropout") {  // aliases at inference
      const std::string value = in(i, 0, false);
      for (const Blob* top : net_.layer_tops(i)) value_[top] = value;
      return;
    }
    if (type == "ReLU") {
      const float slope = options(i).get_or<float>("negative_slope", 0.0f);
      if (slope == 0.0f) {
        node(i, "Relu", {in(i, 0)});
      } else {
        GraphWriter::attribute(node(i, "LeakyRelu", {in(i, 0)}), "alpha", slope);
      }
      return;
    }
    if (type == "Sigmoid" || type == "TanH") return void(node(i, type == "TanH" ? "Tanh" : "Sigmoid", {in(i, 0)}));
    if (type == "LRN") return lrn(i);
    if (type == "Concat") {
      std::vector<std::string> inputs;
      for (size_t k = 0; k < net_.layer_bottoms(i).size(); ++k) inputs.push_back(in(i, k));
      return GraphWriter::attribute(node(i, "Concat", inputs), "axis", int64_t{options(i).get_or<int>("axis", 1)});
    }
    if (type == "Softmax")
      return GraphWriter::attribute(node(i, "Softmax", {in(i, 0)}), "axis", int64_t{options(i).get_or<int>("axis", 1)});
    if (type == "Flatten" || type == "Reshape") return reshape(i);
    fail(i, "no ONNX form is written for this layer type");
  }

  void convolution(size_t i) {
    const auto& conv = dynamic_cast<const ConvolutionLayer&>(net_.layer(i));
    const ConvGeometry& g = conv.geometry();
    std::vector<std::string> inputs = {in(i, 0), param(i, 0)};
    if (net_.layer(i).params().size() > 1) inputs.push_back(param(i, 1));
    NodeProto& n = node(i, "Conv", inputs);
    GraphWriter::attribute(n, "kernel_shape", std::vector<int64_t>{g.kernel_h, g.kernel_w});
    GraphWriter::attribute(n, "strides", std::vector<int64_t>{g.stride_h, g.stride_w});
    GraphWriter::attribute(n, "pads", std::vector<int64_t>{g.pad_h, g.pad_w, g.pad_h, g.pad_w});
    GraphWriter::attribute(n, "dilations", std::vector<int64_t>{g.dilation_h, g.dilation_w});
    GraphWriter::attribute(n, "group", options(i).get_or<int64_t>("group", 1));
  }

  void pooling(size_t i) {
    const config::Section& o = options(i);
    const bool max = o.get_choice("pool", {"max", "ave"}, "max") == "max";
    if (o.get_or<bool>("global_pooling", false))
      return void(node(i, max ? "GlobalMaxPool" : "GlobalAveragePool", {in(i, 0)}));
    const HeightWidth kernel = read_height_width(o, "kernel_size", "kernel", std::nullopt, 1);
    const HeightWidth stride = read_height_width(o, "stride", "stride", 1, 1);
    const HeightWidth pad = read_height_width(o, "pad", "pad", 0, 0);
    // Caffe rounds output sizes up (less a window that would start in the
    // padding); ONNX's ceil_mode is chosen to give the sizes taihu computed.
    const Shape& x = bottom_shape(i);
    const Shape& y = top_shape(i);
    auto size = [](int64_t in, int64_t k, int64_t s, int64_t p, bool ceil) {
      return (in + 2 * p - k + (ceil ? s - 1 : 0)) / s + 1;
    };
    int64_t ceil_mode = -1;
    for (int64_t mode : {0, 1})
      if (size(x[2], kernel.h, stride.h, pad.h, mode) == y[2] && size(x[3], kernel.w, stride.w, pad.w, mode) == y[3]) {
        ceil_mode = mode;
        break;
      }
    if (ceil_mode < 0) fail(i, fmt::format("ONNX pooling cannot give taihu's output {} from {}", y.str(), x.str()));
    NodeProto& n = node(i, max ? "MaxPool" : "AveragePool", {in(i, 0)});
    GraphWriter::attribute(n, "kernel_shape", std::vector<int64_t>{kernel.h, kernel.w});
    GraphWriter::attribute(n, "strides", std::vector<int64_t>{stride.h, stride.w});
    GraphWriter::attribute(n, "pads", std::vector<int64_t>{pad.h, pad.w, pad.h, pad.w});
    GraphWriter::attribute(n, "ceil_mode", ceil_mode);
    // Caffe (and taihu) average over the window clipped to the padded input.
    if (!max && (pad.h > 0 || pad.w > 0)) GraphWriter::attribute(n, "count_include_pad", int64_t{1});
  }

  void inner_product(size_t i) {
    if (options(i).get_or<int>("axis", 1) != 1) fail(i, "axis other than 1 is not written to ONNX");
    std::string x = in(i, 0);
    if (bottom_shape(i).rank() != 2) {
      const std::string flat = net_.layer(i).name() + ":flat";
      GraphWriter::attribute(graph_.node("Flatten", flat, {x}, {flat}), "axis", int64_t{1});
      x = flat;
    }
    std::vector<std::string> inputs = {x, param(i, 0)};
    if (net_.layer(i).params().size() > 1) inputs.push_back(param(i, 1));
    GraphWriter::attribute(node(i, "Gemm", inputs), "transB", int64_t{1});
  }

  void batch_norm(size_t i) {
    const config::Section& o = options(i);
    if (o.has("use_global_stats") && !o.get<bool>("use_global_stats"))
      fail(i, "use_global_stats = false normalises by batch statistics even at inference; ONNX cannot");
    const Layer& layer = net_.layer(i);
    const int64_t c = layer.params()[0].blob->data().count();
    const std::string ones = graph_.floats(layer.name() + "/unit_scale", {c}, std::vector<float>(c, 1.0f));
    const std::string zeros = graph_.floats(layer.name() + "/zero_bias", {c}, std::vector<float>(c, 0.0f));
    NodeProto& n = node(i, "BatchNormalization", {in(i, 0), ones, zeros, param(i, 0), param(i, 1)});
    GraphWriter::attribute(n, "epsilon", o.get_or<float>("eps", 1e-5f));
  }

  // gamma (and beta) spans bottom axes [axis, axis + num_axes); ONNX
  // broadcasts from the right, so they get trailing ones.
  void scale(size_t i) {
    if (net_.layer_bottoms(i).size() != 1) fail(i, "a Scale with two bottoms is not written to ONNX");
    const Layer& layer = net_.layer(i);
    const Shape& x = bottom_shape(i);
    const size_t axis = x.axis(options(i).get_or<int>("axis", 1));
    auto broadcast = [&](size_t p) {
      const Tensor& t = layer.params()[p].blob->data();
      std::vector<int64_t> dims = t.shape().dims();
      dims.resize(x.rank() - axis, 1);
      return graph_.floats(layer.params()[p].name, dims, t.ptr());
    };
    const std::string x_value = in(i, 0);
    if (layer.params().size() == 1) return void(node(i, "Mul", {x_value, broadcast(0)}));
    const std::string product = layer.name() + ":scaled";
    graph_.node("Mul", product, {x_value, broadcast(0)}, {product});
    node(i, "Add", {product, broadcast(1)});
  }

  void eltwise(size_t i) {
    const config::Section& o = options(i);
    const std::string op = o.get_choice("operation", {"sum", "prod", "max"}, "sum");
    const std::vector<float> coeffs = o.get_list_or<float>("coeff", {});
    std::vector<std::string> inputs;
    for (size_t k = 0; k < net_.layer_bottoms(i).size(); ++k) {
      std::string x = in(i, k);
      if (k < coeffs.size() && coeffs[k] != 1.0f) {
        const std::string c = graph_.floats(fmt::format("{}/coeff{}", net_.layer(i).name(), k), {}, &coeffs[k]);
        const std::string scaled = fmt::format("{}:term{}", net_.layer(i).name(), k);
        graph_.node("Mul", scaled, {x, c}, {scaled});
        x = scaled;
      }
      inputs.push_back(x);
    }
    if (op == "prod") {  // Mul takes two inputs
      std::string product = inputs[0];
      for (size_t k = 1; k + 1 < inputs.size(); ++k) {
        const std::string next = fmt::format("{}:prod{}", net_.layer(i).name(), k);
        graph_.node("Mul", next, {product, inputs[k]}, {next});
        product = next;
      }
      return void(node(i, "Mul", {product, inputs.back()}));
    }
    node(i, op == "sum" ? "Sum" : "Max", inputs);
  }

  void lrn(size_t i) {
    const config::Section& o = options(i);
    if (o.get_choice("norm_region", {"across_channels", "within_channel"}, "across_channels") != "across_channels")
      fail(i, "norm_region = within_channel has no ONNX operator");
    NodeProto& n = node(i, "LRN", {in(i, 0)});
    GraphWriter::attribute(n, "size", int64_t{o.get_or<int>("local_size", 5)});
    GraphWriter::attribute(n, "alpha", o.get_or<float>("alpha", 1.0f));
    GraphWriter::attribute(n, "beta", o.get_or<float>("beta", 0.75f));
    GraphWriter::attribute(n, "bias", o.get_or<float>("k", 1.0f));
  }

  // The top's shape, batch axis copied from the input (0 in ONNX's Reshape).
  void reshape(size_t i) {
    const Shape& x = bottom_shape(i);
    const Shape& y = top_shape(i);
    if (y.rank() == 0 || y[0] != x[0]) fail(i, "reshapes the batch axis, which ONNX's symbolic batch cannot follow");
    std::vector<int64_t> dims = y.dims();
    dims[0] = 0;
    const std::string shape = graph_.int64s(net_.layer(i).name() + "/shape", dims);
    node(i, "Reshape", {in(i, 0), shape});
  }

  const Net& net_;
  GraphWriter graph_;
  std::map<const Blob*, std::string> value_;  // the ONNX value holding each blob now
  std::set<std::string> used_;
};

}  // namespace

std::vector<std::string> inference_outputs(const Net& net) {
  // A blob is read when a kept layer reads it, directly or through the Split
  // layers the net inserted (which alone read nothing): walked backwards.
  std::set<const Blob*> read, written;
  for (size_t i = net.num_layers(); i-- > 0;) {
    if (!kept(net, i)) continue;
    const bool split = std::string(net.layer(i).type()) == "Split";
    bool any_top_read = false;
    for (const Blob* t : net.layer_tops(i)) any_top_read |= read.count(t) != 0;
    if (!split || any_top_read)
      for (const Blob* b : net.layer_bottoms(i)) read.insert(b);
    if (!split)
      for (const Blob* t : net.layer_tops(i)) written.insert(t);
  }
  // Named by the description's tops, in layer order.
  std::vector<std::string> outputs;
  for (const config::Section* s : net.description().sections("layer"))
    for (const auto& top : s->get_list_or<std::string>("top", {})) {
      const Blob* b = &net.blob(top);
      if (written.count(b) && !read.count(b) && std::find(outputs.begin(), outputs.end(), top) == outputs.end())
        outputs.push_back(top);
    }
  return outputs;
}

taihu::onnx::ModelProto export_onnx(const Net& net) {
  taihu::onnx::ModelProto model;
  model.set_ir_version(ir_version);
  model.set_producer_name("taihu");
  model.set_producer_version("taihu-convert");
  auto* opset_id = model.add_opset_import();
  opset_id->set_domain("");
  opset_id->set_version(opset);
  auto* graph = model.mutable_graph();
  graph->set_name(net.name());
  Exporter(net, graph).run();
  return model;
}

}  // namespace taihu::interop
