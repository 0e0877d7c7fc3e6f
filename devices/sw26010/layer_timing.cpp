#include "devices/sw26010/layer_timing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "devices/sw26010/batch_norm.hpp"
#include "devices/sw26010/blas_gemm.hpp"
#include "devices/sw26010/conv_bias.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/kernels.hpp"

namespace taihu::sw26010 {

float* Scratch::get(int slot, std::int64_t floats) {
  if (!real_) return timing_address();
  auto& v = slots_[slot];
  if (std::int64_t(v.size()) < floats) v.assign(std::size_t(floats), 0.0f);
  return v.data();
}

namespace {
std::int64_t option_hw(const config::Section* s, const char* key, const char* key_h, std::int64_t fallback) {
  if (!s) return fallback;
  if (s->has(key)) return s->get_list<std::int64_t>(key).front();
  if (s->has(key_h)) return s->get<std::int64_t>(key_h);
  return fallback;
}
// The samples a layer's pass works on: its first bottom's leading dimension.
std::int64_t batch_of(const LayerShape& layer) {
  const auto& bottoms = layer.bottoms;
  return bottoms.empty() || bottoms[0].rank() == 0 ? 1 : bottoms[0][0];
}

std::int64_t per_sample(const Shape& s) {
  return s.rank() == 0 ? s.count() : s.count() / std::max<std::int64_t>(s[0], 1);
}

// One convolution group's shape; `group` gets the layer's group count.
ConvShape conv_shape(const LayerShape& layer, std::int64_t* group) {
  const config::Section* opt = layer.options;
  const Shape& bs = layer.bottoms[0];
  *group = opt ? opt->get_or<std::int64_t>("group", 1) : 1;
  ConvShape s;
  s.channels = bs[1] / *group, s.height = bs[2], s.width = bs[3];
  s.num_output = layer.tops[0][1] / *group;
  s.kernel_h = s.kernel_w = option_hw(opt, "kernel_size", "kernel_h", 1);
  s.stride_h = s.stride_w = option_hw(opt, "stride", "stride_h", 1);
  s.pad_h = s.pad_w = option_hw(opt, "pad", "pad_h", 0);
  return s;
}

// A convolution's three passes, each by the method chosen for it; the
// implicit ones transform what they read and write unless the neighbours keep
// the implicit layout.
LayerTiming time_convolution(CoreGroup& cg, const LayerShape& layer, Scratch& scratch,
                             std::map<std::string, ConvChoice>* cache) {
  const Params& params = cg.params();
  const config::Section* opt = layer.options;
  const std::int64_t q = batch_of(layer);
  const bool dx_needed = layer.propagate_down;
  LayerTiming timing;
  std::int64_t group = 1;
  const ConvShape s = conv_shape(layer, &group);
  // swCaffe's layer adds a bias and its gradient only with bias_term (ResNet-50's convolutions have none)
  const bool bias_term = opt ? opt->get_or<bool>("bias_term", true) : true;
  const ConvChoice choice = conv_layer_choice(params, layer, cache);
  // swCaffe's transform layer keeps a run's inner blobs in the implicit layout
  const bool x_implicit = group == 1 && layer.layouts.bottom_implicit;
  const bool y_implicit = group == 1 && layer.layouts.top_implicit;
  timing.method = choice.describe();
  const std::int64_t in = q * s.channels * s.height * s.width, out = q * s.num_output * s.out_height() * s.out_width();
  const std::int64_t wsize = s.num_output * s.col_rows();
  for (std::int64_t g = 0; g < group; ++g) {
    float *x = scratch.get(0, in), *y = scratch.get(1, out), *w = scratch.get(2, wsize);
    float* bias = bias_term ? scratch.get(3, s.num_output) : nullptr;
    float* col = scratch.get(4, s.col_rows() * s.out_height() * s.out_width());
    if (choice.method == ConvMethod::implicit) {
      float *xi = scratch.get(5, in), *yi = scratch.get(6, out);
      if (!x_implicit) timing.forward += to_hcwn(cg, x, xi, q, s.channels, s.height, s.width).cycles;
      timing.forward += conv_forward_implicit(cg, s, q, xi, w, nullptr, yi).cycles;
      if (!y_implicit) timing.forward += to_nchw(cg, yi, y, q, s.num_output, s.out_height(), s.out_width()).cycles;
      if (bias)
        timing.forward += conv_bias_forward(cg, q, s.num_output, s.out_height() * s.out_width(), bias, y).cycles;
    } else {
      timing.forward += conv_forward_explicit(cg, s, q, x, w, bias, y, col).cycles;
    }
    float *dw = scratch.get(7, wsize), *db = bias_term ? scratch.get(8, s.num_output) : nullptr;
    float* dx = dx_needed ? scratch.get(9, in) : nullptr;
    // each backward pass by its own method; implicit ones transform what they read and write
    float *xi = scratch.get(5, in), *dyi = scratch.get(6, out);
    const std::int64_t ho = s.out_height(), wo = s.out_width();
    if (choice.weight_gradient == ConvMethod::implicit) {
      if (!x_implicit) timing.backward += to_hcwn(cg, x, xi, q, s.channels, s.height, s.width).cycles;
      if (!y_implicit) timing.backward += to_hcwn(cg, y, dyi, q, s.num_output, ho, wo).cycles;
      timing.backward += conv_weight_gradient_implicit(cg, s, q, xi, dyi, dw, nullptr).cycles;
      if (db) timing.backward += conv_bias_gradient(cg, q, s.num_output, ho * wo, y, db).cycles;
    } else {
      timing.backward += conv_weight_gradient_explicit(cg, s, q, x, y, dw, db, col).cycles;
    }
    if (dx && choice.data_gradient == ConvMethod::implicit) {
      if (!y_implicit) timing.backward += to_hcwn(cg, y, dyi, q, s.num_output, ho, wo).cycles;
      timing.backward += conv_data_gradient_implicit(cg, s, q, dyi, w, xi).cycles;
      if (!x_implicit) timing.backward += to_nchw(cg, xi, dx, q, s.channels, s.height, s.width).cycles;
    } else if (dx) {
      timing.backward += conv_data_gradient_explicit(cg, s, q, w, y, dx, col).cycles;
    }
  }
  return timing;
}

LayerTiming time_pooling(CoreGroup& cg, const LayerShape& layer, Scratch& scratch) {
  const config::Section* opt = layer.options;
  const std::int64_t q = batch_of(layer);
  const std::int64_t in_n = layer.bottoms[0].count();
  const std::int64_t out_n = layer.tops.empty() ? 0 : layer.tops[0].count();
  LayerTiming timing;
  const Shape& bs = layer.bottoms[0];
  PoolGeometry g;
  g.height = bs[2], g.width = bs[3];
  const bool global = opt && opt->get_or<bool>("global_pooling", false);
  g.kernel_h = g.kernel_w = global ? bs[2] : option_hw(opt, "kernel_size", "kernel_h", 1);
  if (global) g.kernel_w = bs[3];
  g.stride_h = g.stride_w = option_hw(opt, "stride", "stride_h", 1);
  g.pad_h = g.pad_w = option_hw(opt, "pad", "pad_h", 0);
  g.max = !opt || opt->get_or<std::string>("pool", "max") == "max";
  g.floor = opt && opt->get_or<std::string>("round_mode", "ceil") == "floor";
  const std::int64_t planes = q * bs[1];
  timing.forward += pool_forward(cg, g, scratch.get(0, in_n), scratch.get(1, out_n), planes).cycles;
  timing.backward +=
      pool_backward(cg, g, scratch.get(0, in_n), scratch.get(1, out_n), scratch.get(2, in_n), planes).cycles;
  return timing;
}

// y = x W^T + b, and its gradients (dx only where the layer propagates down).
LayerTiming time_inner_product(CoreGroup& cg, const LayerShape& layer, Scratch& scratch) {
  const auto& bottoms = layer.bottoms;
  const auto& tops = layer.tops;
  const std::int64_t q = batch_of(layer);
  const bool dx_needed = layer.propagate_down;
  LayerTiming timing;
  const std::int64_t k = per_sample(bottoms[0]), no = per_sample(tops[0]);
  float *x = scratch.get(0, q * k), *w = scratch.get(2, no * k), *y = scratch.get(1, q * no);
  timing.forward += blas_gemm(cg, Transpose::no, Transpose::yes, q, no, k, 1, x, k, w, k, 0, y, no).cycles;
  timing.forward += eltwise_sum(cg, y, scratch.get(3, q * no), y, q * no).cycles;  // + bias
  float *dw = scratch.get(7, no * k), *dx = scratch.get(9, q * k);
  timing.backward += blas_gemm(cg, Transpose::yes, Transpose::no, no, k, q, 1, y, no, x, k, 1, dw, k).cycles;
  if (dx_needed)
    timing.backward += blas_gemm(cg, Transpose::no, Transpose::no, q, k, no, 1, y, no, w, k, 0, dx, k).cycles;
  timing.backward +=
      eltwise_sum(cg, y, scratch.get(8, q * no), scratch.get(8, q * no), q * no).cycles;  // bias gradient
  return timing;
}

// One layer's forward and backward time on `cg`: each pass as the kernels
// swCaffe's layer of that type runs.
LayerTiming simulate(CoreGroup& cg, const LayerShape& layer, Scratch& scratch,
                     std::map<std::string, ConvChoice>* cache) {
  const Params& params = cg.params();
  const std::string& type = layer.type;
  const config::Section* opt = layer.options;
  const auto& bottoms = layer.bottoms;
  const auto& tops = layer.tops;
  const std::int64_t q = batch_of(layer);
  const std::int64_t in_n = bottoms.empty() ? 0 : bottoms[0].count();
  LayerTiming timing;
  if (type == "Convolution") {
    timing = time_convolution(cg, layer, scratch, cache);
  } else if (type == "InnerProduct") {
    timing = time_inner_product(cg, layer, scratch);
  } else if (type == "ReLU") {
    timing.forward += relu_forward(cg, scratch.get(0, in_n), scratch.get(1, in_n), in_n).cycles;
    timing.backward += relu_backward(cg, scratch.get(0, in_n), scratch.get(1, in_n), scratch.get(2, in_n), in_n).cycles;
  } else if (type == "Dropout") {
    timing.forward +=
        eltwise_sum(cg, scratch.get(0, in_n), scratch.get(1, in_n), scratch.get(2, in_n), in_n).cycles;  // x * mask
    timing.backward += eltwise_sum(cg, scratch.get(0, in_n), scratch.get(1, in_n), scratch.get(2, in_n), in_n).cycles;
  } else if (type == "Pooling") {
    timing = time_pooling(cg, layer, scratch);
  } else if (type == "BatchNorm") {
    const Shape& bs = bottoms[0];
    const std::int64_t c = bs[1], spatial = per_sample(bottoms[0]) / c;
    const bool in_place =
        opt && opt->has("bottom") && opt->has("top") && opt->get<std::string>("bottom") == opt->get<std::string>("top");
    const BatchNormTiming bn = time_batch_norm(cg, q, c, spatial, in_place);
    timing.forward += bn.forward;
    timing.backward += bn.backward;
    if (bn.multi_pass) timing.method = "multi-pass";
  } else if (type == "Scale") {
    const Shape& bs = bottoms[0];
    const std::int64_t c = bs[1], spatial = per_sample(bottoms[0]) / c;
    AlignedVector<double> s1(static_cast<std::size_t>(c)), s2(static_cast<std::size_t>(c));
    float *x = scratch.get(0, in_n), *y = scratch.get(1, in_n), *a = scratch.get(3, c), *b = scratch.get(4, c);
    timing.forward += channel_affine(cg, x, y, q, c, spatial, a, b).cycles;
    timing.backward += channel_sums(cg, y, x, q, c, spatial, s1.data(), s2.data()).cycles;
    timing.backward += channel_affine(cg, y, scratch.get(2, in_n), q, c, spatial, a, nullptr).cycles;
  } else if (type == "Eltwise") {
    for (std::size_t k = 1; k < bottoms.size(); ++k)
      timing.forward += eltwise_sum(cg, scratch.get(0, in_n), scratch.get(1, in_n), scratch.get(2, in_n), in_n).cycles;
    for (std::size_t k = 1; k < bottoms.size(); ++k)
      timing.backward += copy(cg, scratch.get(0, in_n), scratch.get(1, in_n), in_n).cycles;
  } else if (type == "Concat") {
    for (const Shape& b : bottoms) {
      const std::int64_t n = per_sample(b) * q;
      timing.forward += copy(cg, scratch.get(0, n), scratch.get(1, n), n).cycles;
      timing.backward += copy(cg, scratch.get(1, n), scratch.get(0, n), n).cycles;
    }
  } else if (type == "Split") {
    for (std::size_t k = 1; k < tops.size(); ++k)
      timing.backward += eltwise_sum(cg, scratch.get(0, in_n), scratch.get(1, in_n), scratch.get(2, in_n), in_n).cycles;
  } else if (type == "LRN") {
    // cross-channel window of 5: DMA-bound like three elementwise passes
    for (int k = 0; k < 2; ++k)
      timing.forward += eltwise_sum(cg, scratch.get(0, in_n), scratch.get(1, in_n), scratch.get(2, in_n), in_n).cycles;
    for (int k = 0; k < 3; ++k)
      timing.backward += eltwise_sum(cg, scratch.get(0, in_n), scratch.get(1, in_n), scratch.get(2, in_n), in_n).cycles;
  } else if (type == "SoftmaxWithLoss" || type == "Softmax") {
    const std::int64_t classes = per_sample(bottoms[0]);
    timing.method = "MPE";
    timing.forward += softmax_mpe(cg, scratch.get(0, q * classes), scratch.get(1, q * classes), q, classes).cycles;
    timing.backward += cg.mpe_copy(8.0 * double(q * classes));
  } else {
    timing.simulated = false;  // Accuracy, Flatten, Reshape: no device work
    return timing;
  }
  timing.forward += std::int64_t(params.cg_sync_cycles);
  timing.backward += std::int64_t(params.cg_sync_cycles);
  return timing;
}

}  // namespace

ConvChoice conv_layer_choice(const Params& params, const LayerShape& layer, std::map<std::string, ConvChoice>* cache) {
  std::int64_t group = 1;
  const ConvShape s = conv_shape(layer, &group);
  const std::int64_t q = layer.bottoms[0][0];
  const std::string key = fmt::format("{},{},{},{},{},{},{},{},{}", s.channels, s.height, s.width, s.num_output,
                                      s.kernel_h, s.stride_h, s.pad_h, group, q);
  if (cache && cache->count(key)) return cache->at(key);
  const ConvChoice choice = choose_conv_method(params, s, q, group);
  if (cache) (*cache)[key] = choice;
  return choice;
}

std::vector<LayerShape> net_layer_shapes(const Net& net, std::int64_t samples, const Params& params,
                                         std::map<std::string, ConvChoice>* cache) {
  auto with_samples = [&](const Shape& shape) {
    if (shape.rank() == 0) return shape;
    auto dims = shape.dims();
    dims[0] = samples;
    return Shape(dims);
  };
  std::vector<LayerShape> layers(net.num_layers());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    LayerShape& l = layers[i];
    l.type = net.layer(i).type();
    l.name = net.layer(i).name();
    l.options = net.description().find("layer", l.name);
    for (const Blob* b : net.layer_bottoms(i)) l.bottoms.push_back(with_samples(b->shape()));
    for (const Blob* b : net.layer_tops(i)) l.tops.push_back(with_samples(b->shape()));
    l.propagate_down = !net.layer_propagate_down(i).empty() && net.layer_propagate_down(i)[0];
  }
  const auto layouts = implicit_runs(net, [&](std::size_t i) {
    const LayerShape& l = layers[i];
    // (a grouped convolution is never eligible for the implicit kernels: conv.hpp)
    return l.type == "Convolution" && conv_layer_choice(params, l, cache).implicit_throughout(l.propagate_down);
  });
  for (std::size_t i = 0; i < layers.size(); ++i) layers[i].layouts = layouts[i];
  return layers;
}

LayerTiming time_layer(CoreGroup& cg, const LayerShape& layer, Scratch& scratch,
                       std::map<std::string, ConvChoice>* cache) {
  try {
    return simulate(cg, layer, scratch, cache);
  } catch (const Error&) {
    // the kernels know the buffer and the sizes; the layer is known here
    const std::int64_t samples = batch_of(layer);
    rethrow_with_context(fmt::format("{}, {} samples on the core group",
                                     layer.name.empty() ? fmt::format("a {} layer", layer.type)
                                                        : fmt::format("layer '{}' ({})", layer.name, layer.type),
                                     samples));
  }
}

double iteration_seconds(const Net& net, std::int64_t samples, const Params& params) {
  CoreGroup cg(0, params);
  cg.set_numerics(false);  // timing only: the kernels touch no data
  Scratch scratch(false);
  std::map<std::string, ConvChoice> choices;
  const auto shapes = net_layer_shapes(net, samples, params, &choices);
  std::int64_t cycles = 0, parameters = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    for (const auto& p : net.layer(i).params()) parameters += p.blob->count();
    const auto timing = time_layer(cg, shapes[i], scratch, &choices);
    if (timing.simulated) cycles += timing.forward + timing.backward;
  }
  cycles += gradient_sum_mpe(cg, parameters) + sgd_update(cg, parameters);
  return params.seconds(double(cycles));
}

}  // namespace taihu::sw26010
