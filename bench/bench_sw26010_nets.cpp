// Simulated SW26010 time per layer (forward, backward) for the swCaffe
// networks at swCaffe's batch sizes, each core group running a quarter of the
// batch (the slowest quarter is reported), plus the 4-CG gradient sum.
//   bench_sw26010_nets [--nets=alexnet-bn,vgg16,resnet50,googlenet] [--batch=N]
//                      [--numerics=0|1] [--config=FILE] [--layers=1]
// --numerics=1 also computes every kernel's numbers on the host (on zeros),
// which measures how long simulating an iteration takes; the simulated times
// are the same either way.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/chip.hpp"
#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/kernels.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {

// Main-memory buffers for the kernels: real (zeroed) storage with numerics,
// one aligned dummy address without (timing-only kernels never touch data).
class Buffers {
 public:
  explicit Buffers(bool real) : real_(real) {}
  float* get(int slot, std::int64_t floats) {
    if (!real_) return dummy_;
    auto& v = slots_[slot];
    if (std::int64_t(v.size()) < floats + 32) v.assign(std::size_t(floats + 32), 0.0f);
    auto p = reinterpret_cast<std::uintptr_t>(v.data());
    return reinterpret_cast<float*>((p + 127) / 128 * 128);
  }

 private:
  bool real_;
  alignas(128) static inline float dummy_[64] = {};
  std::map<int, std::vector<float>> slots_;
};

struct LayerTime {
  std::string name, type, method;
  std::int64_t forward = 0, backward = 0;
};

std::int64_t option_hw(const config::Section* s, const char* key, const char* key_h, std::int64_t fallback) {
  if (!s) return fallback;
  if (s->has(key)) return s->get_list<std::int64_t>(key).front();
  if (s->has(key_h)) return s->get<std::int64_t>(key_h);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config_path = bench::arg_value(argc, argv, "config", "");
  const Params params = config_path.empty() ? Params::defaults() : Params::load(config_path);
  const bool numerics = bench::arg_value(argc, argv, "numerics", "0") == "1";
  const bool per_layer = bench::arg_value(argc, argv, "layers", "1") == "1";
  const std::string nets = bench::arg_value(argc, argv, "nets", "alexnet-bn,vgg16,resnet50,googlenet");
  const std::int64_t batch_override = std::stoll(bench::arg_value(argc, argv, "batch", "0"));
  const std::map<std::string, std::int64_t> swcaffe_batch = {
      {"alexnet-bn", 256}, {"vgg16", 64}, {"resnet50", 32}, {"googlenet", 128}};

  std::stringstream list(nets);
  std::string net_name;
  while (std::getline(list, net_name, ',')) {
    const auto path = std::string(TAIHU_SOURCE_DIR) + "/config/nets/" + net_name + ".ini";
    auto doc = std::make_shared<config::Document>(config::Document::parse_file(path));
    const std::int64_t batch =
        batch_override > 0 ? batch_override : (swcaffe_batch.count(net_name) ? swcaffe_batch.at(net_name) : 64);
    const std::int64_t q = (batch + Chip::groups - 1) / Chip::groups;  // the largest quarter
    Net net(doc, 1, 1);  // shapes per sample
    net.set_phase(Phase::train);

    CoreGroup cg(0, params);
    cg.set_numerics(numerics);
    Buffers buf(numerics);
    std::map<std::string, ConvChoice> choices;
    std::vector<LayerTime> times;
    std::int64_t params_total = 0;
    const auto host_start = std::chrono::steady_clock::now();

    for (std::size_t i = 0; i < net.num_layers(); ++i) {
      Layer& layer = net.layer(i);
      const auto& bottoms = net.layer_bottoms(i);
      const auto& tops = net.layer_tops(i);
      for (const auto& p : layer.params()) params_total += p.blob->count();
      const std::string type = layer.type();
      const config::Section* opt = doc->find("layer", layer.name());
      LayerTime t{layer.name(), type, "", 0, 0};
      auto per_sample = [](const Blob* b) {
        return b->shape().rank() == 0 ? b->count() : b->count() / std::max<std::int64_t>(b->shape()[0], 1);
      };
      const std::int64_t in_n = bottoms.empty() ? 0 : q * per_sample(bottoms[0]);
      const std::int64_t out_n = tops.empty() ? 0 : q * per_sample(tops[0]);
      const bool dx_needed = !net.layer_propagate_down(i).empty() && net.layer_propagate_down(i)[0];

      if (type == "Convolution") {
        const Shape& bs = bottoms[0]->shape();
        const std::int64_t group = opt ? opt->get_or<std::int64_t>("group", 1) : 1;
        ConvShape s;
        s.channels = bs[1] / group, s.height = bs[2], s.width = bs[3];
        s.num_output = tops[0]->shape()[1] / group;
        s.kernel_h = s.kernel_w = option_hw(opt, "kernel_size", "kernel_h", 1);
        s.stride_h = s.stride_w = option_hw(opt, "stride", "stride_h", 1);
        s.pad_h = s.pad_w = option_hw(opt, "pad", "pad_h", 0);
        std::ostringstream key;
        key << s.channels << ',' << s.height << ',' << s.width << ',' << s.num_output << ',' << s.kernel_h << ','
            << s.stride_h << ',' << s.pad_h;
        if (!choices.count(key.str())) choices[key.str()] = choose_conv_method(params, s, q);
        const ConvChoice choice = choices[key.str()];
        t.method = to_string(choice.method);
        const std::int64_t in = q * s.channels * s.height * s.width, out = q * s.num_output * s.out_height() * s.out_width();
        const std::int64_t wsize = s.num_output * s.col_rows();
        for (std::int64_t g = 0; g < group; ++g) {
          float *x = buf.get(0, in), *y = buf.get(1, out), *w = buf.get(2, wsize), *bias = buf.get(3, s.num_output);
          float* col = buf.get(4, s.col_rows() * s.out_height() * s.out_width());
          if (choice.method == ConvMethod::implicit) {
            float *xi = buf.get(5, in), *yi = buf.get(6, out);
            t.forward += to_hcwn(cg, x, xi, q, s.channels, s.height, s.width).cycles;
            t.forward += conv_forward_implicit(cg, s, q, xi, w, bias, yi).cycles;
            t.forward += to_nchw(cg, yi, y, q, s.num_output, s.out_height(), s.out_width()).cycles;
          } else {
            t.forward += conv_forward_explicit(cg, s, q, x, w, bias, y, col).cycles;
          }
          float *dw = buf.get(7, wsize), *db = buf.get(8, s.num_output), *dx = dx_needed ? buf.get(9, in) : nullptr;
          t.backward += conv_backward_explicit(cg, s, q, x, w, y, dw, db, dx, col).cycles;
        }
      } else if (type == "InnerProduct") {
        const std::int64_t k = per_sample(bottoms[0]), no = per_sample(tops[0]);
        float *x = buf.get(0, q * k), *w = buf.get(2, no * k), *y = buf.get(1, q * no);
        t.forward += gemm(cg, Transpose::no, Transpose::yes, q, no, k, 1, x, k, w, k, 0, y, no).cycles;
        t.forward += eltwise_sum(cg, y, buf.get(3, q * no), y, q * no).cycles;  // + bias
        float *dw = buf.get(7, no * k), *dx = buf.get(9, q * k);
        t.backward += gemm(cg, Transpose::yes, Transpose::no, no, k, q, 1, y, no, x, k, 1, dw, k).cycles;
        if (dx_needed) t.backward += gemm(cg, Transpose::no, Transpose::no, q, k, no, 1, y, no, w, k, 0, dx, k).cycles;
        t.backward += eltwise_sum(cg, y, buf.get(8, q * no), buf.get(8, q * no), q * no).cycles;  // bias gradient
      } else if (type == "ReLU") {
        t.forward += relu_forward(cg, buf.get(0, in_n), buf.get(1, in_n), in_n).cycles;
        t.backward += relu_backward(cg, buf.get(0, in_n), buf.get(1, in_n), buf.get(2, in_n), in_n).cycles;
      } else if (type == "Dropout") {
        t.forward += eltwise_sum(cg, buf.get(0, in_n), buf.get(1, in_n), buf.get(2, in_n), in_n).cycles;  // x * mask
        t.backward += eltwise_sum(cg, buf.get(0, in_n), buf.get(1, in_n), buf.get(2, in_n), in_n).cycles;
      } else if (type == "Pooling") {
        const Shape& bs = bottoms[0]->shape();
        PoolGeometry g;
        g.height = bs[2], g.width = bs[3];
        const bool global = opt && opt->get_or<bool>("global_pooling", false);
        g.kernel_h = g.kernel_w = global ? bs[2] : option_hw(opt, "kernel_size", "kernel_h", 1);
        if (global) g.kernel_w = bs[3];
        g.stride_h = g.stride_w = option_hw(opt, "stride", "stride_h", 1);
        g.pad_h = g.pad_w = option_hw(opt, "pad", "pad_h", 0);
        g.max = !opt || opt->get_or<std::string>("pool", "max") == "max";
        const std::int64_t planes = q * bs[1];
        t.forward += pool_forward(cg, g, buf.get(0, in_n), buf.get(1, out_n), planes).cycles;
        t.backward += pool_backward(cg, g, buf.get(0, in_n), buf.get(1, out_n), buf.get(2, in_n), planes).cycles;
      } else if (type == "BatchNorm" || type == "Scale") {
        const Shape& bs = bottoms[0]->shape();
        const std::int64_t c = bs[1], spatial = per_sample(bottoms[0]) / c;
        std::vector<double> s1(static_cast<std::size_t>(c)), s2(static_cast<std::size_t>(c));
        float *x = buf.get(0, in_n), *y = buf.get(1, in_n), *a = buf.get(3, c), *b = buf.get(4, c);
        if (type == "BatchNorm") t.forward += channel_sums(cg, x, nullptr, q, c, spatial, s1.data(), s2.data()).cycles;
        t.forward += channel_affine(cg, x, y, q, c, spatial, a, b).cycles;
        t.backward += channel_sums(cg, y, x, q, c, spatial, s1.data(), s2.data()).cycles;
        if (type == "BatchNorm") t.backward += eltwise_sum(cg, y, x, buf.get(2, in_n), in_n).cycles;
        else t.backward += channel_affine(cg, y, buf.get(2, in_n), q, c, spatial, a, nullptr).cycles;
      } else if (type == "Eltwise") {
        for (std::size_t k = 1; k < bottoms.size(); ++k)
          t.forward += eltwise_sum(cg, buf.get(0, in_n), buf.get(1, in_n), buf.get(2, in_n), in_n).cycles;
        for (std::size_t k = 1; k < bottoms.size(); ++k)
          t.backward += copy(cg, buf.get(0, in_n), buf.get(1, in_n), in_n).cycles;
      } else if (type == "Concat") {
        for (const Blob* b : bottoms) {
          const std::int64_t n = q * per_sample(b);
          t.forward += copy(cg, buf.get(0, n), buf.get(1, n), n).cycles;
          t.backward += copy(cg, buf.get(1, n), buf.get(0, n), n).cycles;
        }
      } else if (type == "Split") {
        for (std::size_t k = 1; k < tops.size(); ++k)
          t.backward += eltwise_sum(cg, buf.get(0, in_n), buf.get(1, in_n), buf.get(2, in_n), in_n).cycles;
      } else if (type == "LRN") {
        // cross-channel window of 5: DMA-bound like three elementwise passes
        for (int k = 0; k < 2; ++k) t.forward += eltwise_sum(cg, buf.get(0, in_n), buf.get(1, in_n), buf.get(2, in_n), in_n).cycles;
        for (int k = 0; k < 3; ++k) t.backward += eltwise_sum(cg, buf.get(0, in_n), buf.get(1, in_n), buf.get(2, in_n), in_n).cycles;
      } else if (type == "SoftmaxWithLoss" || type == "Softmax") {
        const std::int64_t classes = per_sample(bottoms[0]);
        t.method = "MPE";
        t.forward += softmax_mpe(cg, buf.get(0, q * classes), buf.get(1, q * classes), q, classes).cycles;
        t.backward += cg.mpe_copy(8.0 * double(q * classes));
      } else {
        continue;  // Accuracy, Flatten, Reshape: no device work
      }
      // every layer is a 4-CG step ending in a Simple_Sync
      t.forward += std::int64_t(params.cg_sync_cycles);
      t.backward += std::int64_t(params.cg_sync_cycles);
      times.push_back(t);
    }
    // CG 0 sums the other 3 groups' weight gradients (P §V-A)
    std::int64_t reduce = 0;
    for (int k = 0; k < 3; ++k) reduce += eltwise_sum(cg, buf.get(0, params_total), buf.get(1, params_total),
                                                      buf.get(0, params_total), params_total).cycles;
    const double host_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();

    std::int64_t fwd = 0, bwd = 0;
    for (const auto& t : times) fwd += t.forward, bwd += t.backward;
    const double iteration = params.seconds(double(fwd + bwd + reduce));
    std::printf("\n%s, batch %lld (%lld per core group), %lld learnable parameters\n", net_name.c_str(),
                (long long)batch, (long long)q, (long long)params_total);
    if (per_layer) {
      std::printf("  %-28s %-16s %-9s %12s %12s\n", "layer", "type", "method", "forward ms", "backward ms");
      for (const auto& t : times)
        std::printf("  %-28s %-16s %-9s %12.3f %12.3f\n", t.name.c_str(), t.type.c_str(), t.method.c_str(),
                    1e3 * params.seconds(double(t.forward)), 1e3 * params.seconds(double(t.backward)));
      std::printf("  %-28s %-16s %-9s %12s %12.3f\n", "(gradient sum on CG 0)", "", "", "",
                  1e3 * params.seconds(double(reduce)));
    }
    std::printf("  simulated: forward %.1f ms, backward %.1f ms, iteration %.1f ms, %.1f images/s\n",
                1e3 * params.seconds(double(fwd)), 1e3 * params.seconds(double(bwd + reduce)), 1e3 * iteration,
                double(batch) / iteration);
    std::printf("  host time for the simulated iteration: %.1f s (%s, one core group; x4 for the chip)\n",
                host_seconds, numerics ? "with numerics" : "timing only");
  }
  return 0;
}
