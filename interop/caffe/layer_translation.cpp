#include "interop/caffe/layer_translation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"

namespace taihu::caffe {

namespace {

using Translator = void (*)(const LayerContext&, LayerOptions&);

void put(LayerOptions& out, std::string key, std::string value) { out.emplace_back(std::move(key), std::move(value)); }

// Caffe's window settings (kernel, stride, pad, dilation): a repeated
// value (one for both axes, or height and width) or the _h/_w pair.
template <class Repeated>
void put_window(const LayerContext& c, LayerOptions& out, const std::string& key, const Repeated& values,
                bool has_h, uint32_t h, bool has_w, uint32_t w) {
  if (values.size() > 2)
    c.fail(fmt::format("{} has {} values; taihu's layers are 2-D (one value, or height and width)", key,
                       values.size()));
  const std::string field_h = key == "kernel_size" ? "kernel_h" : key + "_h";
  if (has_h || has_w) {
    if (!values.empty()) c.fail(fmt::format("give either {} or {} and _w, not both", key, field_h));
    if (has_h != has_w) c.fail(fmt::format("{} and its _w partner must be given together", field_h));
    put(out, key, h == w ? std::to_string(h) : fmt::format("{} {}", h, w));
  } else if (values.size() == 1) {
    put(out, key, std::to_string(values[0]));
  } else if (values.size() == 2) {
    put(out, key, values[0] == values[1] ? std::to_string(values[0]) : fmt::format("{} {}", values[0], values[1]));
  }
}

void convolution(const LayerContext& c, LayerOptions& out) {
  const ConvolutionParameter& p = c.layer->convolution_param();
  if (!p.has_num_output() || p.num_output() == 0) c.fail("convolution_param.num_output is required");
  if (p.axis() != 1) c.fail(fmt::format("convolution_param.axis = {}: taihu convolves NCHW blobs on axis 1", p.axis()));
  put(out, "num_output", std::to_string(p.num_output()));
  put_window(c, out, "kernel_size", p.kernel_size(), p.has_kernel_h(), p.kernel_h(), p.has_kernel_w(), p.kernel_w());
  if (p.kernel_size().empty() && !p.has_kernel_h()) c.fail("convolution_param needs kernel_size (or kernel_h and kernel_w)");
  put_window(c, out, "stride", p.stride(), p.has_stride_h(), p.stride_h(), p.has_stride_w(), p.stride_w());
  put_window(c, out, "pad", p.pad(), p.has_pad_h(), p.pad_h(), p.has_pad_w(), p.pad_w());
  put_window(c, out, "dilation", p.dilation(), false, 0, false, 0);
  if (p.group() != 1) put(out, "group", std::to_string(p.group()));
  if (!p.bias_term()) put(out, "bias_term", "false");
  // Caffe's default filler is constant 0 for both; taihu's weight default is
  // xavier, so a weight filler is always written.
  put(out, "weight_filler", translate_filler(c, "weight_filler", p.weight_filler()));
  if (p.bias_term() && p.has_bias_filler()) put(out, "bias_filler", translate_filler(c, "bias_filler", p.bias_filler()));
}

void pooling(const LayerContext& c, LayerOptions& out) {
  const PoolingParameter& p = c.layer->pooling_param();
  if (p.pool() == PoolingParameter::STOCHASTIC) c.fail("pooling_param.pool = STOCHASTIC is not supported (MAX or AVE)");
  put(out, "pool", p.pool() == PoolingParameter::MAX ? "max" : "ave");
  if (p.round_mode() == PoolingParameter::FLOOR) put(out, "round_mode", "floor");
  if (p.global_pooling()) put(out, "global_pooling", "true");
  put_window(c, out, "kernel_size", p.kernel_size(), p.has_kernel_h(), p.kernel_h(), p.has_kernel_w(), p.kernel_w());
  put_window(c, out, "stride", p.stride(), p.has_stride_h(), p.stride_h(), p.has_stride_w(), p.stride_w());
  put_window(c, out, "pad", p.pad(), p.has_pad_h(), p.pad_h(), p.has_pad_w(), p.pad_w());
}

void inner_product(const LayerContext& c, LayerOptions& out) {
  const InnerProductParameter& p = c.layer->inner_product_param();
  if (!p.has_num_output() || p.num_output() == 0) c.fail("inner_product_param.num_output is required");
  if (p.transpose()) c.fail("inner_product_param.transpose = true is not supported (taihu stores num_output x K)");
  put(out, "num_output", std::to_string(p.num_output()));
  if (p.axis() != 1) put(out, "axis", std::to_string(p.axis()));
  if (!p.bias_term()) put(out, "bias_term", "false");
  put(out, "weight_filler", translate_filler(c, "weight_filler", p.weight_filler()));
  if (p.bias_term() && p.has_bias_filler()) put(out, "bias_filler", translate_filler(c, "bias_filler", p.bias_filler()));
}

void batch_norm(const LayerContext& c, LayerOptions& out) {
  const BatchNormParameter& p = c.layer->batch_norm_param();
  if (p.has_use_global_stats()) put(out, "use_global_stats", p.use_global_stats() ? "true" : "false");
  // Caffe's running statistics decay by moving_average_fraction per
  // iteration (default 0.999; taihu's momentum defaults to 0.9): written out
  // so the imported net keeps Caffe's rate.
  put(out, "momentum", number(p.moving_average_fraction()));
  if (p.has_eps()) put(out, "eps", number(p.eps()));
}

void scale(const LayerContext& c, LayerOptions& out) {
  const ScaleParameter& p = c.layer->scale_param();
  if (p.axis() != 1) put(out, "axis", std::to_string(p.axis()));
  if (p.num_axes() != 1) put(out, "num_axes", std::to_string(p.num_axes()));
  if (p.bias_term()) put(out, "bias_term", "true");
  if (p.has_filler()) put(out, "weight_filler", translate_filler(c, "filler", p.filler()));
  if (p.bias_term() && p.has_bias_filler()) put(out, "bias_filler", translate_filler(c, "bias_filler", p.bias_filler()));
}

void relu(const LayerContext& c, LayerOptions& out) {
  const ReLUParameter& p = c.layer->relu_param();
  if (p.negative_slope() != 0.0f) put(out, "negative_slope", number(p.negative_slope()));
}

void no_options(const LayerContext&, LayerOptions&) {}

void dropout(const LayerContext& c, LayerOptions& out) {
  put(out, "dropout_ratio", number(c.layer->dropout_param().dropout_ratio()));
}

void lrn(const LayerContext& c, LayerOptions& out) {
  const LRNParameter& p = c.layer->lrn_param();
  put(out, "local_size", std::to_string(p.local_size()));
  put(out, "alpha", number(p.alpha()));
  put(out, "beta", number(p.beta()));
  put(out, "k", number(p.k()));
  if (p.norm_region() == LRNParameter::WITHIN_CHANNEL) put(out, "norm_region", "within_channel");
}

void concat(const LayerContext& c, LayerOptions& out) {
  const ConcatParameter& p = c.layer->concat_param();
  if (p.has_axis() && p.has_concat_dim()) c.fail("concat_param: give axis or the old concat_dim, not both");
  const int axis = p.has_concat_dim() ? static_cast<int>(p.concat_dim()) : p.axis();
  if (axis != 1) put(out, "axis", std::to_string(axis));
}

void eltwise(const LayerContext& c, LayerOptions& out) {
  const EltwiseParameter& p = c.layer->eltwise_param();
  static const std::map<int, std::string> names = {
      {EltwiseParameter::PROD, "prod"}, {EltwiseParameter::SUM, "sum"}, {EltwiseParameter::MAX, "max"}};
  put(out, "operation", names.at(p.operation()));
  if (p.coeff_size() > 0) {
    if (p.operation() != EltwiseParameter::SUM) c.fail("eltwise_param.coeff applies to operation SUM only");
    std::vector<std::string> coeffs;
    for (float v : p.coeff()) coeffs.push_back(number(v));
    put(out, "coeff", fmt::format("{}", fmt::join(coeffs, " ")));
  }
}

void softmax(const LayerContext& c, LayerOptions& out) {
  if (c.layer->softmax_param().axis() != 1) put(out, "axis", std::to_string(c.layer->softmax_param().axis()));
}

void softmax_with_loss(const LayerContext& c, LayerOptions& out) {
  softmax(c, out);
  const LossParameter& p = c.layer->loss_param();
  if (p.has_ignore_label()) put(out, "ignore_label", std::to_string(p.ignore_label()));
  static const std::map<int, std::string> modes = {{LossParameter::FULL, "full"},
                                                   {LossParameter::VALID, "valid"},
                                                   {LossParameter::BATCH_SIZE, "batch_size"},
                                                   {LossParameter::NONE, "none"}};
  // The old `normalize: false` means BATCH_SIZE unless normalization is given.
  if (p.has_normalization())
    put(out, "normalization", modes.at(p.normalization()));
  else if (p.has_normalize() && !p.normalize())
    put(out, "normalization", "batch_size");
}

void accuracy(const LayerContext& c, LayerOptions& out) {
  const AccuracyParameter& p = c.layer->accuracy_param();
  if (p.top_k() != 1) put(out, "top_k", std::to_string(p.top_k()));
  if (p.axis() != 1) put(out, "axis", std::to_string(p.axis()));
  if (p.has_ignore_label()) put(out, "ignore_label", std::to_string(p.ignore_label()));
}

void flatten(const LayerContext& c, LayerOptions& out) {
  const FlattenParameter& p = c.layer->flatten_param();
  if (p.axis() != 1) put(out, "axis", std::to_string(p.axis()));
  if (p.end_axis() != -1) put(out, "end_axis", std::to_string(p.end_axis()));
}

void reshape(const LayerContext& c, LayerOptions& out) {
  const ReshapeParameter& p = c.layer->reshape_param();
  if (!p.has_shape()) c.fail("reshape_param.shape is required");
  put(out, "shape", fmt::format("{}", fmt::join(p.shape().dim(), " ")));
  if (p.axis() != 0) put(out, "axis", std::to_string(p.axis()));
  if (p.num_axes() != -1) put(out, "num_axes", std::to_string(p.num_axes()));
}

struct TypeRule {
  Translator translate;
  std::vector<std::string> param_fields;
  bool in_place;
};

const std::map<std::string, TypeRule>& rules() {
  static const std::map<std::string, TypeRule> table = {
      {"Convolution", {convolution, {"convolution_param"}, false}},
      {"Pooling", {pooling, {"pooling_param"}, false}},
      {"InnerProduct", {inner_product, {"inner_product_param"}, false}},
      {"BatchNorm", {batch_norm, {"batch_norm_param"}, false}},
      {"Scale", {scale, {"scale_param"}, false}},
      {"ReLU", {relu, {"relu_param"}, true}},
      {"Sigmoid", {no_options, {"sigmoid_param"}, true}},
      {"TanH", {no_options, {"tanh_param"}, true}},
      {"Dropout", {dropout, {"dropout_param"}, true}},
      {"LRN", {lrn, {"lrn_param"}, false}},
      {"Concat", {concat, {"concat_param"}, false}},
      {"Eltwise", {eltwise, {"eltwise_param"}, false}},
      {"Softmax", {softmax, {"softmax_param"}, false}},
      {"SoftmaxWithLoss", {softmax_with_loss, {"softmax_param", "loss_param"}, false}},
      {"Accuracy", {accuracy, {"accuracy_param"}, false}},
      {"Flatten", {flatten, {"flatten_param"}, false}},
      {"Reshape", {reshape, {"reshape_param"}, false}},
  };
  return table;
}

}  // namespace

std::string LayerContext::describe() const {
  return fmt::format("{}: layer '{}' ({})", where, excerpt(layer->name()), excerpt(layer->type()));
}

void LayerContext::fail(const std::string& message) const {
  throw ConfigError(fmt::format("{}: {}", describe(), message));
}

bool is_translatable(const std::string& caffe_type) { return rules().count(caffe_type) != 0; }

bool runs_in_place(const std::string& type) {
  auto it = rules().find(type);
  return it != rules().end() && it->second.in_place;
}

std::vector<std::string> own_param_fields(const std::string& caffe_type) {
  auto it = rules().find(caffe_type);
  return it == rules().end() ? std::vector<std::string>{} : it->second.param_fields;
}

void translate_layer_options(const LayerContext& context, LayerOptions& out) {
  rules().at(context.layer->type()).translate(context, out);
}

void translate_param_specs(const LayerContext& c, LayerOptions& out) {
  const std::string& type = c.layer->type();
  // Caffe lists a layer's parameter blobs by position; taihu names them.
  std::vector<std::string> names;
  if (type == "Convolution" || type == "InnerProduct" || type == "Scale") names = {"weight", "bias"};
  if (type == "BatchNorm") return;  // running statistics: never learnt in taihu, whatever lr_mult says
  if (c.layer->param_size() > static_cast<int>(names.size()))
    c.fail(fmt::format("has {} param {{ }} entries, but a {} layer has {} learnable parameter blob(s)",
                       c.layer->param_size(), type, names.size()));
  for (int i = 0; i < c.layer->param_size(); ++i) {
    const ParamSpec& spec = c.layer->param(i);
    if (spec.has_name() || spec.has_share_mode())
      c.fail(fmt::format("param {} shares its blob by name ('{}'): weight sharing is not supported", i,
                         excerpt(spec.name())));
    if (spec.lr_mult() != 1.0f) put(out, names[i] + "_lr_mult", number(spec.lr_mult()));
    if (spec.decay_mult() != 1.0f) put(out, names[i] + "_decay_mult", number(spec.decay_mult()));
  }
}

std::string translate_filler(const LayerContext& c, const std::string& field, const FillerParameter& f) {
  const std::string& type = f.type();
  auto refuse = [&](const std::string& what) { c.fail(fmt::format("{} ({}): {}", field, type, what)); };
  if ((type == "xavier" || type == "msra") && f.variance_norm() != FillerParameter::FAN_IN)
    refuse("variance_norm other than FAN_IN is not supported (taihu scales by fan-in)");
  if (type == "constant") return fmt::format("constant {}", number(f.value()));
  if (type == "uniform") return fmt::format("uniform {} {}", number(f.min()), number(f.max()));
  if (type == "xavier" || type == "msra") return type;
  if (type == "gaussian") {
    if (f.mean() != 0.0f) refuse("a non-zero mean is not supported");
    if (f.sparse() != -1) refuse("sparse Gaussian filling is not supported");
    return fmt::format("gaussian {}", number(f.std()));
  }
  refuse("this filler type is not supported (constant, uniform, gaussian, xavier, msra)");
  return {};
}

std::string number(float value) { return fmt::format("{}", value); }

}  // namespace taihu::caffe
