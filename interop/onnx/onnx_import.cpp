#include "interop/onnx/onnx_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <utility>

#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"
#include "core/train/train_setup.hpp"
#include "interop/onnx/onnx_importer.hpp"

namespace taihu::interop {

namespace onnx_in {

std::string clean_name(const std::string& raw) {
  std::string out;
  for (const unsigned char c : raw)
    out += std::isalnum(c) || c == '_' || c == '.' || c == '-' ? static_cast<char>(c) : '_';
  const auto first = out.find_first_not_of('_');
  return first == std::string::npos ? std::string() : out.substr(first);
}

namespace {

// The product of the dims, refusing negative ones and overflow.
int64_t element_count(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t count = 1;
  for (const int64_t d : dims) {
    if (d < 0) throw ConfigError(fmt::format("{}: negative dimension {}", what, d));
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      throw ConfigError(fmt::format("{}: dims {} hold more values than a file can", what, fmt::join(dims, "x")));
    count *= d;
  }
  return count;
}

}  // namespace

Constant decode(const TensorProto& t, const std::string& what) {
  if (t.data_location() == 1 || t.external_data_size() > 0)
    throw ConfigError(fmt::format("{}: its data are in an external file, which taihu does not read (save the model "
                                  "with its weights inside: onnx.save_model(model, path, "
                                  "save_as_external_data=False))",
                                  what));
  Constant c;
  c.dims.assign(t.dims().begin(), t.dims().end());
  const std::string& raw = t.raw_data();
  auto take = [&](std::size_t element_size, int stored) -> int64_t {
    const int64_t have = raw.empty() ? stored : static_cast<int64_t>(raw.size() / element_size);
    const int64_t count = element_count(c.dims, what);
    if (count != have || (!raw.empty() && raw.size() % element_size != 0))
      throw ConfigError(fmt::format("{}: dims {} need {} values, the file holds {}", what, fmt::join(c.dims, "x"),
                                    count, have));
    return count;
  };
  switch (t.data_type()) {
    case TensorProto::FLOAT: {
      const int64_t n = take(4, t.float_data_size());
      c.floats.resize(static_cast<std::size_t>(n));
      if (!raw.empty()) std::memcpy(c.floats.data(), raw.data(), raw.size());  // little-endian, as ONNX stores
      else std::copy(t.float_data().begin(), t.float_data().end(), c.floats.begin());
      break;
    }
    case TensorProto::DOUBLE: {
      const int64_t n = take(8, t.double_data_size());
      c.floats.resize(static_cast<std::size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        double v = 0;
        if (!raw.empty()) std::memcpy(&v, raw.data() + 8 * i, 8);
        else v = t.double_data(static_cast<int>(i));
        c.floats[static_cast<std::size_t>(i)] = static_cast<float>(v);
      }
      break;
    }
    case TensorProto::INT64:
    case TensorProto::INT32: {
      const bool wide = t.data_type() == TensorProto::INT64;
      const int64_t n = take(wide ? 8 : 4, wide ? t.int64_data_size() : t.int32_data_size());
      c.integer = true;
      c.ints.resize(static_cast<std::size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        if (!raw.empty() && wide) {
          std::memcpy(&c.ints[static_cast<std::size_t>(i)], raw.data() + 8 * i, 8);
        } else if (!raw.empty()) {
          int32_t v = 0;
          std::memcpy(&v, raw.data() + 4 * i, 4);
          c.ints[static_cast<std::size_t>(i)] = v;
        } else {
          const int at = static_cast<int>(i);
          c.ints[static_cast<std::size_t>(i)] = wide ? t.int64_data(at) : t.int32_data(at);
        }
      }
      break;
    }
    default:
      throw ConfigError(fmt::format("{}: element type {} is not read (float, double, int32 and int64 are)", what,
                                    t.data_type()));
  }
  return c;
}

Importer::Importer(const onnx::ModelProto& model, const std::string& source, const OnnxImportOptions& options)
    : graph_(model.graph()), source_(source), options_(options) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
}

ImportedOnnx Importer::run() {
  for (const TensorProto& t : graph_.initializer())
    constants_[t.name()] =
        std::make_shared<const Constant>(decode(t, fmt::format("{}: initializer '{}'", source_, excerpt(t.name()))));
  read_input();
  for (const NodeProto& node : graph_.node())
    for (const auto& name : node.input()) ++uses_[name];
  for (const auto& o : graph_.output()) ++uses_[o.name()];
  for (const NodeProto& node : graph_.node()) add(node);
  finish();
  ImportedOnnx out;
  out.description = config::Document::parse(text(), source_);
  out.weights = std::move(weights_);
  out.notes = std::move(notes_);
  return out;
}

void Importer::fail(const NodeProto& node, const std::string& why) const {
  throw ConfigError(fmt::format("{}: node '{}' ({}): {}", source_, excerpt(node.name()), excerpt(node.op_type()),
                                why));
}

// ---- attributes -------------------------------------------------------
const AttributeProto* Importer::attribute(const NodeProto& node, const std::string& name) const {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t Importer::get_int(const NodeProto& node, const std::string& name, int64_t fallback) const {
  const auto* a = attribute(node, name);
  return a ? a->i() : fallback;
}

float Importer::get_float(const NodeProto& node, const std::string& name, float fallback) const {
  const auto* a = attribute(node, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> Importer::get_ints(const NodeProto& node, const std::string& name,
                                       std::vector<int64_t> fallback) const {
  const auto* a = attribute(node, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

// ---- values -----------------------------------------------------------
const Constant* Importer::constant(const std::string& name) const {
  auto it = constants_.find(name);
  return it == constants_.end() ? nullptr : it->second.get();
}

const Value& Importer::value(const NodeProto& node, int k) const {
  if (!has_input(node, k)) fail(node, fmt::format("input {} is missing", k));
  auto it = values_.find(node.input(k));
  if (it != values_.end()) return it->second;
  if (constants_.count(node.input(k)))
    fail(node, fmt::format("input {} ('{}') is a constant where taihu needs a computed value", k,
                           excerpt(node.input(k))));
  fail(node, fmt::format("reads '{}', which no earlier node computes (the nodes are not in topological order, or "
                         "the graph has a cycle)",
                         excerpt(node.input(k))));
}

const Constant& Importer::weight(const NodeProto& node, int k, const char* what) const {
  if (!has_input(node, k)) fail(node, fmt::format("has no {}", what));
  const Constant* c = constant(node.input(k));
  if (!c || c->integer)
    fail(node, fmt::format("its {} ('{}') must be a float initializer", what, excerpt(node.input(k))));
  return *c;
}

std::string Importer::unique(std::set<std::string>& taken, std::string name) {
  if (name.empty()) name = "v";
  std::string candidate = name;
  for (int k = 2; !taken.insert(candidate).second; ++k) candidate = fmt::format("{}_{}", name, k);
  return candidate;
}

// ---- layers -----------------------------------------------------------
LayerText& Importer::layer(const NodeProto& node, const std::string& type, std::vector<std::string> bottoms, int rank,
                 const std::string& suffix) {
  std::string base = clean_name(node.name());
  if (base.empty()) base = clean_name(node.op_type()) + "_" + std::to_string(layers_.size());
  LayerText l{unique(layer_names_, base + suffix), type, std::move(bottoms), {}, {}};
  const std::string top = suffix.empty() && node.output_size() > 0 ? node.output(0) : l.name;
  l.tops.push_back(unique(blob_names_, clean_name(top)));
  if (suffix.empty()) values_[node.output(0)] = Value{l.tops[0], rank};
  layers_.push_back(std::move(l));
  return layers_.back();
}

void Importer::weights(const LayerText& l, const std::string& suffix, std::vector<int64_t> dims,
                       std::vector<float> values) {
  weights_[l.name + "/" + suffix] = OnnxWeights{std::move(dims), std::move(values)};
}

void Importer::rename(LayerText& l, const std::string& wanted) {
  layer_names_.erase(l.name);
  const std::string name = unique(layer_names_, wanted);
  for (const char* suffix : {"/weight", "/bias"})
    if (auto node = weights_.extract(l.name + suffix)) {
      node.key() = name + suffix;
      weights_.insert(std::move(node));
    }
  l.name = name;
}

// Outputs past the first must be unused (a mask, indices, training statistics).
void Importer::only_first_output(const NodeProto& node, const char* what) const {
  for (int k = 1; k < node.output_size(); ++k)
    if (!node.output(k).empty() && uses_.count(node.output(k)))
      fail(node, fmt::format("its output {} ({}) is used, which taihu does not compute", k, what));
}

// ---- input, outputs, text ---------------------------------------------
void Importer::read_input() {
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& v : graph_.input())
    if (!constants_.count(v.name())) inputs.push_back(&v);
  if (inputs.size() != 1)
    throw ConfigError(fmt::format("{}: the graph takes {} inputs besides its initializers; taihu's nets take one "
                                  "(the images)",
                                  source_, inputs.size()));
  const auto& in = *inputs[0];
  const auto& type = in.type().tensor_type();
  if (type.elem_type() != TensorProto::FLOAT)
    throw ConfigError(fmt::format("{}: input '{}' has element type {}, not float", source_, excerpt(in.name()),
                                  type.elem_type()));
  std::vector<int64_t> shape;
  bool known = type.shape().dim_size() >= 2;
  for (int k = 1; k < type.shape().dim_size(); ++k) {
    const auto& d = type.shape().dim(k);
    known &= d.has_dim_value() && d.dim_value() > 0;
    shape.push_back(d.dim_value());
  }
  if (auto it = options_.input_shapes.find(in.name()); it != options_.input_shapes.end()) {
    shape = it->second;
    known = true;
  }
  if (!known)
    throw ConfigError(fmt::format("{}: input '{}' has no fixed per-sample shape: give it with "
                                  "--input-shape={}=C,H,W",
                                  source_, excerpt(in.name()), excerpt(in.name())));
  input_shape_ = shape;
  blob_names_.insert("data");
  values_[in.name()] = Value{"data", static_cast<int>(shape.size()) + 1};
  if (in.name() != "data")
    notes_.push_back(fmt::format("input '{}' is blob 'data' (the trainer's data blob)", in.name()));
}

void Importer::finish() {
  std::vector<std::string> outputs;
  for (const auto& o : graph_.output()) {
    auto it = values_.find(o.name());
    if (it == values_.end())
      throw ConfigError(fmt::format("{}: graph output '{}' is not computed by any node", source_, excerpt(o.name())));
    outputs.push_back(it->second.blob);
  }
  if (!options_.training_head) return;
  if (outputs.size() != 1 || values_.at(graph_.output(0).name()).rank != 2) {
    notes_.push_back("no training head (loss, accuracy): the graph has not one output of rank 2 (class scores)");
    return;
  }
  std::string logits = outputs[0];
  for (LayerText& l : layers_)
    if (l.tops[0] == logits && l.type == "Softmax") {
      l.set("phase", "test");  // probabilities for inference; the loss takes the logits
      logits = l.bottoms[0];
    }
  head_ = true;
  for (const char* name : {"label", "loss", "accuracy"})
    if (!blob_names_.insert(name).second)
      throw ConfigError(fmt::format("{}: the graph already has a value named '{}'; import with --no-training-head",
                                    source_, name));
  layers_.push_back({unique(layer_names_, "loss"), "SoftmaxWithLoss", {logits, "label"}, {"loss"}, {}});
  layers_.push_back(
      {unique(layer_names_, "accuracy"), "Accuracy", {logits, "label"}, {"accuracy"}, {{"phase", "test"}}});
}

// The graph's name, unless it is an exporter's default (torch.onnx.export:
// "torch_jit", "main_graph"): then the file's.
std::string Importer::net_name() const {
  std::string name = clean_name(graph_.name());
  if (name.empty() || name == "torch_jit" || name == "main_graph" || name.starts_with("torch-jit"))
    name = clean_name(std::filesystem::path(source_).stem().string());
  return name.empty() ? "imported" : name;
}

std::string Importer::text() const {
  std::string t = fmt::format("[net]\nname = {}\n\n[input data]\nshape = {}\n\n", net_name(),
                              fmt::join(input_shape_, " "));
  if (head_) t += "[input label]\nshape =\n\n";
  for (const LayerText& l : layers_) {
    t += fmt::format("[layer {}]\ntype = {}\nbottom = {}\ntop = {}\n", l.name, l.type, fmt::join(l.bottoms, " "),
                     fmt::join(l.tops, " "));
    for (const auto& [k, v] : l.options) t += fmt::format("{} = {}\n", k, v);
    t += "\n";
  }
  return t;
}

}  // namespace onnx_in

onnx::ModelProto read_onnx(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open the ONNX file", path.string()));
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    throw ConfigError(fmt::format("{}: not an ONNX model (protobuf parsing failed: a truncated or damaged file?)",
                                  path.string()));
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw ConfigError(fmt::format("{}: the ONNX model has no graph", path.string()));
  return model;
}

ImportedOnnx import_onnx(const onnx::ModelProto& model, const std::string& source, const OnnxImportOptions& options) {
  return onnx_in::Importer(model, source, options).run();
}

Checkpoint onnx_checkpoint(const ImportedOnnx& imported, Net& net, uint64_t seed) {
  for (const Param* p : std::as_const(net).params()) {
    auto it = imported.weights.find(p->name);
    if (it == imported.weights.end())
      throw ConfigError(fmt::format("ONNX import: the net's parameter '{}' has no weights in the file", p->name));
    Tensor& t = p->blob->data();
    if (static_cast<int64_t>(it->second.values.size()) != t.count())
      throw ConfigError(fmt::format("ONNX import: parameter '{}' has {} values in the file, the net needs {} ({})",
                                    p->name, it->second.values.size(), t.count(), t.shape().str()));
    std::copy(it->second.values.begin(), it->second.values.end(), t.ptr());
  }
  return starting_checkpoint(net, seed);
}

}  // namespace taihu::interop
