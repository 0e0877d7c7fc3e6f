#pragma once
// One Caffe layer's own settings as taihu layer options: each supported type
// maps its *_param message to the keys taihu's layer of the same name reads
// (core/layers/*.hpp), with Caffe's defaults made explicit where taihu's
// differ. A setting taihu cannot honour is a ConfigError naming the layer,
// its type and the field; settings that only choose an implementation
// (`engine`) are accepted and ignored.

#include <string>
#include <utility>
#include <vector>

#include "interop/caffe/caffe.pb.h"

namespace taihu::caffe {

// key = value lines of one [layer] section, in order.
using LayerOptions = std::vector<std::pair<std::string, std::string>>;

// Where a layer came from, for messages: "net.prototxt:12: layer 'conv1' (Convolution)".
struct LayerContext {
  std::string where;  // "file:line"
  const LayerParameter* layer = nullptr;
  std::string describe() const;
  [[noreturn]] void fail(const std::string& message) const;
};

// The taihu layer types a Caffe type of the same name becomes (Data-like
// layers and Split are handled by the net importer, not here).
bool is_translatable(const std::string& caffe_type);
// Whether taihu's layer of this type may run in place (top == bottom).
bool runs_in_place(const std::string& type);
// The *_param fields of LayerParameter that a layer of this type may set.
std::vector<std::string> own_param_fields(const std::string& caffe_type);

// The type's options, from its *_param message (and loss_param); appends to `out`.
void translate_layer_options(const LayerContext& context, LayerOptions& out);

// Caffe's per-parameter ParamSpecs (lr_mult, decay_mult) as taihu's
// "<param>_lr_mult" keys; weight sharing (a named ParamSpec) is refused.
void translate_param_specs(const LayerContext& context, LayerOptions& out);

// A filler as taihu's one-value form ("xavier", "gaussian 0.01", ...).
std::string translate_filler(const LayerContext& context, const std::string& field, const FillerParameter& filler);

// Shortest text that reads back as the same float.
std::string number(float value);

}  // namespace taihu::caffe
