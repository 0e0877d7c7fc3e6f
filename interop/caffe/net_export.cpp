#include "interop/caffe/net_export.hpp"

#include <fmt/format.h>
#include <google/protobuf/text_format.h>

#include <map>

#include "core/common/error.hpp"
#include "core/layers/filler.hpp"
#include "core/layers/window_options.hpp"

namespace taihu::caffe {

namespace {

using config::Section;

void export_filler(const Section& s, const std::string& key, const std::string& fallback, FillerParameter* out) {
  const Filler f = Filler::from_options(s, key, fallback);
  switch (f.kind) {
    case Filler::Kind::constant:
      out->set_type("constant"), out->set_value(f.a);
      break;
    case Filler::Kind::gaussian:
      out->set_type("gaussian"), out->set_std(f.a);
      break;
    case Filler::Kind::uniform:
      out->set_type("uniform"), out->set_min(f.a), out->set_max(f.b);
      break;
    case Filler::Kind::xavier:
      out->set_type("xavier");
      break;
    case Filler::Kind::msra:
      out->set_type("msra");
      break;
  }
}

// The window option `key` (or its _h/_w pair) as Caffe's fields, when it
// differs from `fallback`. set(h, w) writes them.
template <class Set>
void export_window(const Section& s, const std::string& key, const std::string& prefix, int64_t fallback,
                   bool required, Set&& set) {
  const HeightWidth hw = read_height_width(s, key, prefix, required ? std::nullopt : std::optional(fallback), 0);
  if (required || hw.h != fallback || hw.w != fallback) set(hw.h, hw.w);
}

// Kernel (unless `with_kernel` is false: global pooling), stride and pad, as
// one value where height and width agree, else as _h/_w: the same fields in
// ConvolutionParameter and PoolingParameter.
template <class WindowParameter>
void export_kernel_stride_pad(const Section& s, bool with_kernel, WindowParameter* p) {
  if (with_kernel)
    export_window(s, "kernel_size", "kernel", 0, true, [&](int64_t h, int64_t w) {
      if (h == w) p->add_kernel_size(h);
      else p->set_kernel_h(h), p->set_kernel_w(w);
    });
  export_window(s, "stride", "stride", 1, false, [&](int64_t h, int64_t w) {
    if (h == w) p->add_stride(h);
    else p->set_stride_h(h), p->set_stride_w(w);
  });
  export_window(s, "pad", "pad", 0, false, [&](int64_t h, int64_t w) {
    if (h == w) p->add_pad(h);
    else p->set_pad_h(h), p->set_pad_w(w);
  });
}

void export_convolution(const Section& s, ConvolutionParameter* p) {
  p->set_num_output(s.get<uint32_t>("num_output"));
  export_kernel_stride_pad(s, true, p);
  export_window(s, "dilation", "dilation", 1, false, [&](int64_t h, int64_t w) {
    p->add_dilation(h);
    if (h != w) p->add_dilation(w);
  });
  if (s.has("group")) p->set_group(s.get<uint32_t>("group"));
  if (!s.get_or<bool>("bias_term", true)) p->set_bias_term(false);
  export_filler(s, "weight_filler", "xavier", p->mutable_weight_filler());
  if (p->bias_term() && s.has("bias_filler")) export_filler(s, "bias_filler", "constant 0", p->mutable_bias_filler());
}

void export_pooling(const Section& s, PoolingParameter* p) {
  p->set_pool(s.get_choice("pool", {"max", "ave"}, "max") == "max" ? PoolingParameter::MAX : PoolingParameter::AVE);
  const bool global = s.get_or<bool>("global_pooling", false);
  if (global) p->set_global_pooling(true);
  if (s.get_choice("round_mode", {"ceil", "floor"}, "ceil") == "floor") p->set_round_mode(PoolingParameter::FLOOR);
  export_kernel_stride_pad(s, !global, p);
}

void export_inner_product(const Section& s, InnerProductParameter* p) {
  p->set_num_output(s.get<uint32_t>("num_output"));
  if (s.has("axis")) p->set_axis(s.get<int>("axis"));
  if (!s.get_or<bool>("bias_term", true)) p->set_bias_term(false);
  export_filler(s, "weight_filler", "xavier", p->mutable_weight_filler());
  if (p->bias_term() && s.has("bias_filler")) export_filler(s, "bias_filler", "constant 0", p->mutable_bias_filler());
}

// Options of the types whose Caffe message is a handful of plain fields.
void export_simple(const Section& s, const std::string& type, LayerParameter* l) {
  if (type == "BatchNorm") {
    auto* p = l->mutable_batch_norm_param();
    p->set_moving_average_fraction(s.get_or<float>("momentum", 0.9f));  // taihu's default, not Caffe's 0.999
    if (s.has("eps")) p->set_eps(s.get<float>("eps"));
    if (s.has("use_global_stats")) p->set_use_global_stats(s.get<bool>("use_global_stats"));
  } else if (type == "Scale") {
    auto* p = l->mutable_scale_param();
    if (s.has("axis")) p->set_axis(s.get<int>("axis"));
    if (s.has("num_axes")) p->set_num_axes(s.get<int>("num_axes"));
    if (s.get_or<bool>("bias_term", false)) p->set_bias_term(true);
    if (s.has("weight_filler")) export_filler(s, "weight_filler", "constant 1", p->mutable_filler());
    if (p->bias_term() && s.has("bias_filler")) export_filler(s, "bias_filler", "constant 0", p->mutable_bias_filler());
  } else if (type == "ReLU") {
    if (s.has("negative_slope")) l->mutable_relu_param()->set_negative_slope(s.get<float>("negative_slope"));
  } else if (type == "Dropout") {
    if (s.has("dropout_ratio")) l->mutable_dropout_param()->set_dropout_ratio(s.get<float>("dropout_ratio"));
  } else if (type == "LRN") {
    auto* p = l->mutable_lrn_param();
    p->set_local_size(s.get_or<uint32_t>("local_size", 5));
    p->set_alpha(s.get_or<float>("alpha", 1.0f));
    p->set_beta(s.get_or<float>("beta", 0.75f));
    p->set_k(s.get_or<float>("k", 1.0f));
    if (s.get_choice("norm_region", {"across_channels", "within_channel"}, "across_channels") == "within_channel")
      p->set_norm_region(LRNParameter::WITHIN_CHANNEL);
  } else if (type == "Concat") {
    if (s.has("axis")) l->mutable_concat_param()->set_axis(s.get<int>("axis"));
  } else if (type == "Eltwise") {
    const std::string op = s.get_choice("operation", {"sum", "prod", "max"}, "sum");
    auto* p = l->mutable_eltwise_param();
    p->set_operation(op == "sum" ? EltwiseParameter::SUM : op == "prod" ? EltwiseParameter::PROD : EltwiseParameter::MAX);
    for (float c : s.get_list_or<float>("coeff", {})) p->add_coeff(c);
  } else if (type == "Softmax" || type == "SoftmaxWithLoss") {
    if (s.has("axis")) l->mutable_softmax_param()->set_axis(s.get<int>("axis"));
    if (s.has("ignore_label")) l->mutable_loss_param()->set_ignore_label(s.get<int>("ignore_label"));
    static const std::map<std::string, LossParameter::NormalizationMode> modes = {
        {"valid", LossParameter::VALID}, {"full", LossParameter::FULL},
        {"batch_size", LossParameter::BATCH_SIZE}, {"none", LossParameter::NONE}};
    if (type == "SoftmaxWithLoss" && s.has("normalization"))
      l->mutable_loss_param()->set_normalization(
          modes.at(s.get_choice("normalization", {"valid", "full", "batch_size", "none"}, "valid")));
  } else if (type == "Accuracy") {
    auto* p = l->mutable_accuracy_param();
    if (s.has("top_k")) p->set_top_k(s.get<uint32_t>("top_k"));
    if (s.has("axis")) p->set_axis(s.get<int>("axis"));
    if (s.has("ignore_label")) p->set_ignore_label(s.get<int>("ignore_label"));
  } else if (type == "Flatten") {
    if (s.has("axis")) l->mutable_flatten_param()->set_axis(s.get<int>("axis"));
    if (s.has("end_axis")) l->mutable_flatten_param()->set_end_axis(s.get<int>("end_axis"));
  } else if (type == "Reshape") {
    auto* p = l->mutable_reshape_param();
    for (int64_t d : s.get_list<int64_t>("shape")) p->mutable_shape()->add_dim(d);
    if (s.has("axis")) p->set_axis(s.get<int>("axis"));
    if (s.has("num_axes")) p->set_num_axes(s.get<int>("num_axes"));
  } else if (type != "Sigmoid" && type != "TanH") {
    throw s.error("type", fmt::format("layer type '{}' has no Caffe counterpart that taihu-convert writes", type));
  }
}

// weight_lr_mult and friends as Caffe's positional ParamSpecs.
void export_param_specs(const Section& s, LayerParameter* l) {
  const char* names[] = {"weight", "bias"};
  int count = 0;
  for (int i = 0; i < 2; ++i)
    if (s.has(std::string(names[i]) + "_lr_mult") || s.has(std::string(names[i]) + "_decay_mult")) count = i + 1;
  for (int i = 0; i < count; ++i) {
    ParamSpec* spec = l->add_param();
    spec->set_lr_mult(s.get_or<float>(std::string(names[i]) + "_lr_mult", 1.0f));
    spec->set_decay_mult(s.get_or<float>(std::string(names[i]) + "_decay_mult", 1.0f));
  }
}

void export_layer(const Section& s, CaffeNet& net) {
  LayerParameter* l = net.add_layer();
  const std::string type = s.get<std::string>("type");
  l->set_name(s.name());
  l->set_type(type);
  for (const auto& b : s.get_list_or<std::string>("bottom", {})) l->add_bottom(b);
  for (const auto& t : s.get_list_or<std::string>("top", {})) l->add_top(t);
  const std::string phase = s.get_choice("phase", {"train", "test", "both"}, "both");
  if (phase != "both") l->add_include()->set_phase(phase == "train" ? TRAIN : TEST);
  if (s.has("loss_weight")) l->add_loss_weight(s.get<float>("loss_weight"));
  export_param_specs(s, l);
  if (type == "Convolution") export_convolution(s, l->mutable_convolution_param());
  else if (type == "Pooling") export_pooling(s, l->mutable_pooling_param());
  else if (type == "InnerProduct") export_inner_product(s, l->mutable_inner_product_param());
  else export_simple(s, type, l);
  s.reject_unused("taihu-convert's Caffe export");
}

}  // namespace

CaffeNet export_net(const config::Document& description) {
  CaffeNet net;
  net.set_name(description.section("net").get_or<std::string>("name", "net"));
  for (const Section* input : description.sections("input")) {
    LayerParameter* l = net.add_layer();
    l->set_name(input->name());
    l->set_type("Input");
    l->add_top(input->name());
    BlobShape* shape = l->mutable_input_param()->add_shape();
    shape->add_dim(1);  // the batch axis
    for (int64_t d : input->get_list_or<int64_t>("shape", {})) shape->add_dim(d);
  }
  for (const Section* layer : description.sections("layer")) export_layer(*layer, net);
  return net;
}

std::string prototxt_of(const CaffeNet& net) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(net, &text);
  return text;
}

}  // namespace taihu::caffe
