#include "interop/caffe/net_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"
#include "core/config/identifier.hpp"
#include "interop/caffe/layer_translation.hpp"
#include "interop/caffe/proto_files.hpp"

namespace taihu::caffe {

namespace {

using Shape = std::vector<int64_t>;
using google::protobuf::FieldDescriptor;

// The data-producing layer types, each with the *_param it may set.
const std::map<std::string, std::vector<std::string>>& input_layer_fields() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"Input", {"input_param"}},
      {"Data", {"data_param", "transform_param"}},
      {"ImageData", {"image_data_param", "transform_param"}},
      {"HDF5Data", {"hdf5_data_param"}},
      {"MemoryData", {"memory_data_param", "transform_param"}},
      {"DummyData", {"dummy_data_param"}},
  };
  return table;
}

// Layer and blob names become section names ([layer NAME], [input NAME]) and
// list items of the net config: they must be what its sections' names may be
// (config::is_identifier). A name with other characters (a space, '[', '(',
// '+', a byte above 127) made a description that taihu-convert wrote and no
// reader could read back (fuzz_prototxt).
std::string name_problem(const std::string& what, const std::string& name) {
  if (name.empty()) return fmt::format("has an empty {} name", what);
  if (!config::is_identifier(name))
    return fmt::format("{} name '{}' holds characters that taihu's net config cannot hold in a name (letters, "
                       "digits and _ - / . only)",
                       what, excerpt(name));
  return "";
}

void check_name(const LayerContext& c, const std::string& what, const std::string& name) {
  if (const std::string problem = name_problem(what, name); !problem.empty()) c.fail(problem);
}

// The net's name is a value of the config's [net] section, which cannot hold
// a control character, a blank at either end (trimmed away) or a '#' or ';'
// after a blank (a comment): such a name read back as another (fuzz_prototxt).
void check_net_name(const ParsedNet& parsed) {
  const std::string& name = parsed.net.name();
  bool writable = name.empty() || (name.front() != ' ' && name.front() != '\t' && name.back() != ' ' && name.back() != '\t');
  for (size_t i = 0; i < name.size() && writable; ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    writable = !((c < 0x20 && c != '\t') || c == 0x7f) &&
               !((c == '#' || c == ';') && i > 0 && (name[i - 1] == ' ' || name[i - 1] == '\t'));
  }
  if (!writable)
    throw ConfigError(fmt::format("{}: the net's name '{}' cannot be written to taihu's net config (a control "
                                  "character, a blank at either end, or '#' or ';' after a blank): rename it",
                                  parsed.source, excerpt(name)));
}

// Every field the layer sets must be one that taihu reads for its type.
void check_fields(const LayerContext& c, const std::vector<std::string>& own) {
  static const std::set<std::string> common = {"name",    "type",    "bottom",  "top",           "loss_weight",
                                               "param",   "include", "exclude", "propagate_down"};
  std::vector<const FieldDescriptor*> fields;
  c.layer->GetReflection()->ListFields(*c.layer, &fields);
  for (const FieldDescriptor* f : fields) {
    if (common.count(f->name()) || std::find(own.begin(), own.end(), f->name()) != own.end()) continue;
    if (f->name() == "blobs") c.fail("holds weights (blobs) in the prototxt: give weights as a .caffemodel");
    c.fail(fmt::format("field '{}' does not apply to a {} layer (taihu would have to ignore it)", f->name(),
                       c.layer->type()));
  }
  for (int i = 0; i < c.layer->propagate_down_size(); ++i)
    if (!c.layer->propagate_down(i))
      c.fail(fmt::format("propagate_down: false (bottom {}) is not supported: taihu decides which bottoms get "
                         "gradients from the net",
                         i));
}

// include/exclude rules as "train", "test" or "" (both phases).
std::string phase_of(const LayerContext& c) {
  const LayerParameter& l = *c.layer;
  if (l.include_size() > 0 && l.exclude_size() > 0) c.fail("give include or exclude rules, not both");
  const bool including = l.include_size() > 0;
  const auto& rules = including ? l.include() : l.exclude();
  if (rules.empty()) return "";
  std::set<int> phases;
  for (const NetStateRule& rule : rules) {
    if (rule.has_min_level() || rule.has_max_level() || rule.stage_size() || rule.not_stage_size())
      c.fail("include/exclude by level or stage is not supported (only phase: TRAIN or TEST)");
    if (!rule.has_phase()) return including ? "" : "never";
    phases.insert(rule.phase());
  }
  if (!including) {
    std::set<int> rest;
    for (int p : {TRAIN, TEST})
      if (!phases.count(p)) rest.insert(p);
    phases = rest;
  }
  if (phases.size() == 2) return "";
  if (phases.empty()) return "never";
  return *phases.begin() == TRAIN ? "train" : "test";
}

Shape without_batch(const LayerContext* c, const BlobShape& shape, const std::string& blob) {
  if (shape.dim_size() < 1) {
    const std::string m = fmt::format("the shape of input '{}' has no axes (it needs at least the batch axis)",
                                      excerpt(blob));
    if (c) c->fail(m);
    throw ConfigError(m);
  }
  return Shape(shape.dim().begin() + 1, shape.dim().end());
}

class Importer {
 public:
  Importer(const ParsedNet& parsed, const ImportOptions& options) : parsed_(parsed), options_(options) {}

  ImportedNet run() {
    check_net_name(parsed_);
    reserve_caffe_names();
    add_legacy_inputs();
    for (int i = 0; i < parsed_.net.layer_size(); ++i) add_layer(i);
    // (Not a structured binding: clang 14 cannot capture one in a lambda.)
    for (const auto& given : options_.input_shapes) {
      const std::string& name = given.first;
      if (std::none_of(inputs_.begin(), inputs_.end(), [&](const auto& input) { return input.first == name; }))
        throw ConfigError(fmt::format("{}: --input-shape names '{}', which is not an input of the net", parsed_.source,
                                      excerpt(name)));
    }
    return assemble();
  }

 private:
  struct Layer {
    std::string name;
    LayerOptions options;
    int line;
  };

  // Names of every Caffe blob, so that a renamed in-place top never takes one.
  void reserve_caffe_names() {
    for (const auto& name : parsed_.net.input()) taken_.insert(name);
    for (const auto& l : parsed_.net.layer()) {
      taken_.insert(l.bottom().begin(), l.bottom().end());
      taken_.insert(l.top().begin(), l.top().end());
    }
  }

  std::string where(int line) const { return line > 0 ? fmt::format("{}:{}", parsed_.source, line) : parsed_.source; }

  void add_legacy_inputs() {
    const CaffeNet& net = parsed_.net;
    const int n = net.input_size();
    if (n == 0) {
      if (net.input_shape_size() || net.input_dim_size())
        throw ConfigError(fmt::format("{}: input_shape/input_dim given without `input:` names", parsed_.source));
      return;
    }
    if (net.input_shape_size() && net.input_dim_size())
      throw ConfigError(fmt::format("{}: give input_shape or input_dim, not both", parsed_.source));
    if (net.input_shape_size() && net.input_shape_size() != n)
      throw ConfigError(fmt::format("{}: {} inputs but {} input_shape entries", parsed_.source, n, net.input_shape_size()));
    if (net.input_dim_size() && net.input_dim_size() != 4 * n)
      throw ConfigError(fmt::format("{}: {} inputs need {} input_dim values (num, channels, height, width each), "
                                    "got {}",
                                    parsed_.source, n, 4 * n, net.input_dim_size()));
    for (int i = 0; i < n; ++i) {
      std::optional<Shape> shape;
      if (net.input_shape_size()) shape = without_batch(nullptr, net.input_shape(i), net.input(i));
      if (net.input_dim_size()) shape = Shape(net.input_dim().begin() + 4 * i + 1, net.input_dim().begin() + 4 * i + 4);
      if (const std::string problem = name_problem("input", net.input(i)); !problem.empty())
        throw ConfigError(fmt::format("{}: `input:` {}: {}", parsed_.source, i + 1, problem));
      add_input(net.input(i), shape, nullptr);
    }
  }

  void add_input(const std::string& name, std::optional<Shape> shape, const LayerContext* c) {
    if (auto given = options_.input_shapes.find(name); given != options_.input_shapes.end()) shape = given->second;
    if (!shape) {
      const std::string m = fmt::format(
          "the shape of input '{}' is not in the prototxt (a data layer's images are in its database): give it "
          "per sample, e.g. --input-shape={}=3,224,224",
          excerpt(name), excerpt(name));
      if (c) c->fail(m);
      throw ConfigError(fmt::format("{}: {}", parsed_.source, m));
    }
    for (const auto& [existing, existing_shape] : inputs_)
      if (existing == name) {
        // The TRAIN and TEST data layers both feed `data` and `label`.
        if (existing_shape != *shape) {
          const std::string m = fmt::format("input '{}' is given two shapes, [{}] and [{}]", excerpt(name),
                                            fmt::join(existing_shape, " "), fmt::join(*shape, " "));
          if (c) c->fail(m);
          throw ConfigError(m);
        }
        return;
      }
    inputs_.emplace_back(name, *shape);
    current_[name] = name;
  }

  void add_layer(int index) {
    const LayerParameter& l = parsed_.net.layer(index);
    const int line = index < static_cast<int>(parsed_.layer_lines.size()) ? parsed_.layer_lines[index] : 0;
    LayerContext c{where(line), &l};
    if (l.type().empty()) c.fail("has no type");
    check_name(c, "layer", l.name());
    for (const auto& b : l.bottom()) check_name(c, "bottom blob", b);
    for (const auto& t : l.top()) check_name(c, "top blob", t);
    if (auto data = input_layer_fields().find(l.type()); data != input_layer_fields().end()) {
      check_fields(c, data->second);
      add_data_layer(c);
      return;
    }
    if (l.type() == "Split") {
      check_fields(c, {});
      if (l.bottom_size() != 1) c.fail("a Split layer takes one bottom");
      for (const auto& t : l.top()) current_[t] = current(l.bottom(0));
      return;
    }
    if (!is_translatable(l.type()))
      c.fail(fmt::format("layer type '{}' is not supported by taihu (supported: Convolution, Pooling, InnerProduct, "
                         "BatchNorm, Scale, ReLU, Sigmoid, TanH, Dropout, LRN, Concat, Eltwise, Softmax, "
                         "SoftmaxWithLoss, Accuracy, Flatten, Reshape, Split and the data layers Input, Data, "
                         "ImageData, HDF5Data, MemoryData, DummyData)",
                         excerpt(l.type())));
    check_fields(c, own_param_fields(l.type()));
    if (!layer_names_.insert(l.name()).second) c.fail("a second layer has this name; taihu needs unique layer names");
    add_computing_layer(c, line);
  }

  std::string current(const std::string& blob) const {
    auto it = current_.find(blob);
    return it == current_.end() ? blob : it->second;
  }

  // A fresh blob for the output of an in-place layer that taihu cannot run in place.
  std::string fresh_blob(const std::string& layer, const std::string& blob) {
    std::string name = taken_.count(layer) ? fmt::format("{}_{}", blob, layer) : layer;
    for (int k = 2; taken_.count(name); ++k) name = fmt::format("{}_{}_{}", blob, layer, k);
    taken_.insert(name);
    renamed_.push_back(fmt::format("{} -> {}", blob, name));
    return name;
  }

  void add_computing_layer(const LayerContext& c, int line) {
    const LayerParameter& l = *c.layer;
    const std::string phase = phase_of(c);
    if (phase == "never") {
      notes_.push_back(fmt::format("{}: left out: its include/exclude rules exclude it from both phases", c.describe()));
      return;
    }
    Layer out{l.name(), {}, line};
    out.options.emplace_back("type", l.type());
    std::vector<std::string> bottoms, tops;
    for (const auto& b : l.bottom()) bottoms.push_back(current(b));
    for (int k = 0; k < l.top_size(); ++k) {
      const std::string& t = l.top(k);
      const bool in_place = std::find(l.bottom().begin(), l.bottom().end(), t) != l.bottom().end();
      const bool allowed = k == 0 && l.bottom_size() > 0 && l.bottom(0) == t && runs_in_place(l.type());
      // In place in taihu too: on the blob that now holds the Caffe blob's value.
      const std::string taihu_top = !in_place ? t : allowed ? bottoms[0] : fresh_blob(l.name(), t);
      tops.push_back(taihu_top);
      current_[t] = taihu_top;
    }
    if (!bottoms.empty()) out.options.emplace_back("bottom", fmt::format("{}", fmt::join(bottoms, " ")));
    if (!tops.empty()) out.options.emplace_back("top", fmt::format("{}", fmt::join(tops, " ")));
    if (!phase.empty()) out.options.emplace_back("phase", phase);
    add_loss_weight(c, out.options);
    translate_param_specs(c, out.options);
    translate_layer_options(c, out.options);
    layers_.push_back(std::move(out));
  }

  void add_loss_weight(const LayerContext& c, LayerOptions& options) {
    const LayerParameter& l = *c.layer;
    if (l.loss_weight_size() == 0) return;
    for (int k = 1; k < l.loss_weight_size(); ++k)
      if (l.loss_weight(k) != 0.0f) c.fail(fmt::format("loss_weight of top {} is not 0: taihu weighs top 0 only", k));
    options.emplace_back("loss_weight", number(l.loss_weight(0)));
  }

  void add_data_layer(const LayerContext& c) {
    const LayerParameter& l = *c.layer;
    if (l.bottom_size() > 0) c.fail("a data layer takes no bottoms");
    const std::vector<std::optional<Shape>> shapes = data_shapes(c);
    for (int k = 0; k < l.top_size(); ++k) add_input(l.top(k), shapes[k], &c);
    if (l.type() != "Input")
      notes_.push_back(fmt::format("{}: its tops are net inputs; where the data comes from and how it is "
                                   "transformed (source, batch size, scale, mean, crop, mirror) belongs to the "
                                   "training config's [data] and is not carried over",
                                   c.describe()));
  }

  // The per-sample shape of each top that the layer itself declares.
  std::vector<std::optional<Shape>> data_shapes(const LayerContext& c) const {
    const LayerParameter& l = *c.layer;
    const size_t n = static_cast<size_t>(l.top_size());
    std::vector<std::optional<Shape>> shapes(n);
    auto from_list = [&](const auto& list) {
      if (list.size() != 0 && list.size() != 1 && static_cast<size_t>(list.size()) != n)
        c.fail(fmt::format("gives {} shapes for {} tops (give one, or one per top)", list.size(), n));
      for (size_t k = 0; k < n && list.size() > 0; ++k)
        shapes[k] = without_batch(&c, list[list.size() == 1 ? 0 : static_cast<int>(k)], l.top(static_cast<int>(k)));
    };
    if (l.type() == "Input") from_list(l.input_param().shape());
    if (l.type() == "DummyData") {
      const DummyDataParameter& p = l.dummy_data_param();
      if (p.shape_size() > 0) {
        from_list(p.shape());
      } else if (p.channels_size() > 0) {
        for (size_t k = 0; k < n; ++k) {
          const int i = p.channels_size() == 1 ? 0 : static_cast<int>(k);
          if (i >= p.channels_size() || i >= p.height_size() || i >= p.width_size())
            c.fail("dummy_data_param needs channels, height and width for every top");
          shapes[k] = Shape{p.channels(i), p.height(i), p.width(i)};
        }
      }
    }
    if (l.type() == "MemoryData" && n > 0) {
      const MemoryDataParameter& p = l.memory_data_param();
      shapes[0] = Shape{p.channels(), p.height(), p.width()};
    }
    if (l.type() == "ImageData" && n > 0) {
      // Colour or grey, resized to new_height x new_width, then maybe cropped.
      const ImageDataParameter& p = l.image_data_param();
      const int64_t crop = l.transform_param().crop_size() ? l.transform_param().crop_size() : p.crop_size();
      if (crop > 0) shapes[0] = Shape{p.is_color() ? 3 : 1, crop, crop};
      else if (p.new_height() > 0 && p.new_width() > 0) shapes[0] = Shape{p.is_color() ? 3 : 1, p.new_height(), p.new_width()};
    }
    // A data layer's second top is the label: one value per sample.
    const bool labelled = l.type() == "Data" || l.type() == "ImageData" || l.type() == "MemoryData";
    if (labelled && n > 1 && !shapes[1]) shapes[1] = Shape{};
    return shapes;
  }

  ImportedNet assemble() {
    ImportedNet out;
    config::Document& doc = out.description;
    const config::Location at{parsed_.source, 0};
    doc.section_or_add("net").set("name", parsed_.net.name().empty() ? "net" : parsed_.net.name(), at);
    for (const auto& [name, shape] : inputs_)
      doc.section_or_add("input", name).set("shape", fmt::format("{}", fmt::join(shape, " ")), at);
    for (const Layer& layer : layers_) {
      config::Section& s = doc.section_or_add("layer", layer.name);
      for (const auto& [key, value] : layer.options) s.set(key, value, config::Location{parsed_.source, layer.line});
    }
    if (!renamed_.empty())
      notes_.push_back(fmt::format("{}: {} layer(s) run in place in Caffe but cannot in taihu; each writes a blob "
                                   "of its own (named after the layer) that later layers read instead: {}",
                                   parsed_.source, renamed_.size(), fmt::join(renamed_, ", ")));
    if (parsed_.net.force_backward())
      notes_.push_back(fmt::format("{}: force_backward is ignored: taihu computes the gradients training needs",
                                   parsed_.source));
    out.notes = std::move(notes_);
    return out;
  }

  const ParsedNet& parsed_;
  const ImportOptions& options_;
  std::vector<std::pair<std::string, Shape>> inputs_;
  std::vector<Layer> layers_;
  std::map<std::string, std::string> current_;  // Caffe blob -> the taihu blob that holds its latest value
  std::set<std::string> taken_;
  std::set<std::string> layer_names_;
  std::vector<std::string> renamed_;  // "blob -> new blob", for the note
  std::vector<std::string> notes_;
};

}  // namespace

ParsedNet parse_net(const std::string& text, const std::string& source) {
  ParsedNet parsed;
  parsed.source = source;
  parsed.net = parse_net_text(text, source, &parsed.layer_lines);
  return parsed;
}

ParsedNet read_net(const std::string& path) { return parse_net(read_file_bytes(path, "Caffe net"), path); }

ImportedNet import_net(const ParsedNet& parsed, const ImportOptions& options) {
  return Importer(parsed, options).run();
}

std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(fmt::format("--input-shape='{}': expected NAME=C,H,W (per sample, e.g. data=3,224,224; "
                                  "label= for one value per sample)",
                                  excerpt(text)));
  std::vector<int64_t> dims;
  const std::string values = text.substr(eq + 1);  // split_list's views point into it
  for (auto item : config::split_list(values)) {
    auto value = config::parse_value<int64_t>(item);
    if (!value || *value < 1)
      throw ConfigError(fmt::format("--input-shape='{}': '{}' is not a positive dimension", excerpt(text),
                                    excerpt(item)));
    dims.push_back(*value);
  }
  return {text.substr(0, eq), dims};
}

}  // namespace taihu::caffe
