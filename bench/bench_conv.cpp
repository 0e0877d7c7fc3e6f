// Convolution layer throughput against plain SGEMM of the same shapes.
//
// For each layer (AlexNet conv1-5, VGG-16's distinct convolutions, ResNet-50's
// distinct convolutions) it times the layer's forward and backward (weight,
// bias and data gradients; median of --runs) and the GEMMs a perfect im2col
// implementation would run on the whole batch:
//   forward      M = out/group, N = Hout*Wout*batch, K = C/group*kh*kw
//   weight grad  M x K, inner dimension N     (dY * col^T)
//   data grad    K x N, inner dimension M     (W^T * dY)
// GEMM GFLOP/s are measured with N capped so that no matrix exceeds
// --gemm-mb; GEMM throughput no longer depends on N at that size.
//
//   bench_conv [--batch=32] [--runs=3] [--nets=alexnet,vgg16,resnet50,lenet]
//              [--filter=SUBSTRING] [--json=FILE] [--kernel=auto] [--threads=N]
//              [--budget-mb=32] [--batch-below=512] [--target-columns=4096] [--chunk-kb=512] [--min-chunk-columns=256] [--gemm-mb=256] [--clock=wall|cpu]
//              [--transposed=yes|no] (stride-1 bottom gradient as a convolution of the top gradient)
//              [--gemm=no] (skip the reference GEMMs, for profiling)
//              [--conv=auto|measured|im2col|dnnl] (the convolutions' algorithm, as [conv] algorithm)

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/config/config.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/layers/convolution.hpp"
#include "core/layers/registry.hpp"

using namespace taihu;

namespace {

struct ConvShape {
  std::string net, name;
  int64_t in_c, size, out_c, kernel, stride, pad, group;  // square images and kernels
  int64_t out_size() const { return (size + 2 * pad - kernel) / stride + 1; }
};

std::vector<ConvShape> all_shapes() {
  std::vector<ConvShape> s = {
      // LeNet (Caffe's MNIST example, 28x28 input).
      {"lenet", "conv1", 1, 28, 20, 5, 1, 0, 1},
      {"lenet", "conv2", 20, 12, 50, 5, 1, 0, 1},
      // AlexNet (Caffe's bvlc_alexnet, 227x227 input).
      {"alexnet", "conv1", 3, 227, 96, 11, 4, 0, 1},
      {"alexnet", "conv2", 96, 27, 256, 5, 1, 2, 2},
      {"alexnet", "conv3", 256, 13, 384, 3, 1, 1, 1},
      {"alexnet", "conv4", 384, 13, 384, 3, 1, 1, 2},
      {"alexnet", "conv5", 384, 13, 256, 3, 1, 1, 2},
      // VGG-16: distinct convolutions (conv3_3 = conv3_2, conv4_3 = conv4_2, conv5_x alike).
      {"vgg16", "conv1_1", 3, 224, 64, 3, 1, 1, 1},
      {"vgg16", "conv1_2", 64, 224, 64, 3, 1, 1, 1},
      {"vgg16", "conv2_1", 64, 112, 128, 3, 1, 1, 1},
      {"vgg16", "conv2_2", 128, 112, 128, 3, 1, 1, 1},
      {"vgg16", "conv3_1", 128, 56, 256, 3, 1, 1, 1},
      {"vgg16", "conv3_2", 256, 56, 256, 3, 1, 1, 1},
      {"vgg16", "conv4_1", 256, 28, 512, 3, 1, 1, 1},
      {"vgg16", "conv4_2", 512, 28, 512, 3, 1, 1, 1},
      {"vgg16", "conv5_1", 512, 14, 512, 3, 1, 1, 1},
      // ResNet-50 (original, stride in the first 1x1 of a stage): distinct convolutions.
      {"resnet50", "conv1", 3, 224, 64, 7, 2, 3, 1},
      {"resnet50", "res2_1x1_64_64", 64, 56, 64, 1, 1, 0, 1},
      {"resnet50", "res2_3x3_64", 64, 56, 64, 3, 1, 1, 1},
      {"resnet50", "res2_1x1_64_256", 64, 56, 256, 1, 1, 0, 1},
      {"resnet50", "res2_1x1_256_64", 256, 56, 64, 1, 1, 0, 1},
      {"resnet50", "res3_1x1_256_128_s2", 256, 56, 128, 1, 2, 0, 1},
      {"resnet50", "res3_1x1_256_512_s2", 256, 56, 512, 1, 2, 0, 1},
      {"resnet50", "res3_3x3_128", 128, 28, 128, 3, 1, 1, 1},
      {"resnet50", "res3_1x1_128_512", 128, 28, 512, 1, 1, 0, 1},
      {"resnet50", "res3_1x1_512_128", 512, 28, 128, 1, 1, 0, 1},
      {"resnet50", "res4_1x1_512_256_s2", 512, 28, 256, 1, 2, 0, 1},
      {"resnet50", "res4_1x1_512_1024_s2", 512, 28, 1024, 1, 2, 0, 1},
      {"resnet50", "res4_3x3_256", 256, 14, 256, 3, 1, 1, 1},
      {"resnet50", "res4_1x1_256_1024", 256, 14, 1024, 1, 1, 0, 1},
      {"resnet50", "res4_1x1_1024_256", 1024, 14, 256, 1, 1, 0, 1},
      {"resnet50", "res5_1x1_1024_512_s2", 1024, 14, 512, 1, 2, 0, 1},
      {"resnet50", "res5_1x1_1024_2048_s2", 1024, 14, 2048, 1, 2, 0, 1},
      {"resnet50", "res5_3x3_512", 512, 7, 512, 3, 1, 1, 1},
      {"resnet50", "res5_1x1_512_2048", 512, 7, 2048, 1, 1, 0, 1},
      {"resnet50", "res5_1x1_2048_512", 2048, 7, 512, 1, 1, 0, 1},
  };
  return s;
}

using taihu::bench::arg_value;

// --clock=cpu measures process CPU time instead of wall time: with
// --threads=1 that is robust against other jobs sharing the machine.
bool use_cpu_clock = false;

double now() {
  if (!use_cpu_clock) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds(const std::function<void()>& f) {
  const double t0 = now();
  f();
  return now() - t0;
}

double median_seconds(int runs, const std::function<void()>& f) {
  f();  // warm-up: allocation, page faults, OpenBLAS threads
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) t.push_back(seconds(f));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void fill(std::vector<float>& v, float value) { std::fill(v.begin(), v.end(), value); }

// Seconds for the full GEMM C(m x n) = op(A) op(B) with inner dimension k,
// measured with the largest dimension in `capped` ('m', 'n' or 'k') reduced
// so that no matrix exceeds max_floats, then scaled back.
double gemm_seconds(blas::Trans ta, blas::Trans tb, int64_t m, int64_t n, int64_t k, char capped, int64_t max_floats,
                    int runs) {
  int64_t& big = capped == 'm' ? m : capped == 'n' ? n : k;
  const int64_t full = big;
  const int64_t other = std::max({m * n, m * k, n * k}) / big;
  big = std::clamp<int64_t>(max_floats / std::max<int64_t>(other, 1), 1, big);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n));
  fill(a, 0.5f), fill(b, 0.25f);
  const double t = median_seconds(runs, [&] { blas::gemm(ta, tb, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data()); });
  return t * static_cast<double>(full) / static_cast<double>(big);
}

struct Result {
  ConvShape shape;
  double flops = 0;                                                       // forward; backward is twice this
  double fwd = 0, bwd = 0, gemm_fwd = 0, gemm_wgrad = 0, gemm_dgrad = 0;  // seconds
  ConvolutionLayer::Plan plan;
};

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::info);
  blas::KernelRequest request;
  request.kernel = arg_value(argc, argv, "kernel", "auto");
  request.threads = std::stoi(arg_value(argc, argv, "threads", "0"));
  blas::select_kernel(request, argc, argv);

  const bool skip_gemm = arg_value(argc, argv, "gemm", "yes") == "no";
  use_cpu_clock = arg_value(argc, argv, "clock", "wall") == "cpu";
  const int64_t batch = std::stoll(arg_value(argc, argv, "batch", "32"));
  const int runs = std::max(1, std::stoi(arg_value(argc, argv, "runs", "3")));
  const std::string nets = arg_value(argc, argv, "nets", "alexnet,vgg16,resnet50");
  const std::string filter = arg_value(argc, argv, "filter", "");
  const int64_t gemm_floats = std::stoll(arg_value(argc, argv, "gemm-mb", "256")) << 18;
  auto& tuning = ConvolutionLayer::tuning();
  tuning.column_budget_bytes =
      std::stoll(arg_value(argc, argv, "budget-mb", std::to_string(tuning.column_budget_bytes >> 20))) << 20;
  tuning.batch_below_columns =
      std::stoll(arg_value(argc, argv, "batch-below", std::to_string(tuning.batch_below_columns)));
  tuning.target_columns = std::stoll(arg_value(argc, argv, "target-columns", std::to_string(tuning.target_columns)));
  tuning.transposed_data_grad = arg_value(argc, argv, "transposed", "yes") != "no";
  tuning.min_chunk_columns =
      std::stoll(arg_value(argc, argv, "min-chunk-columns", std::to_string(tuning.min_chunk_columns)));
  tuning.chunk_cache_bytes =
      std::stoll(arg_value(argc, argv, "chunk-kb", std::to_string(tuning.chunk_cache_bytes >> 10))) << 10;
  ConvolutionLayer::default_algorithm() = ConvolutionLayer::parse_algorithm(arg_value(argc, argv, "conv", "auto"));

  std::printf(
      "Convolution vs SGEMM: batch %lld, %d threads, kernel %s, median of %d runs (%s time), column budget %lld MB\n",
      static_cast<long long>(batch), compute_threads(), blas::kernel_name().c_str(), runs, use_cpu_clock ? "CPU" : "wall",
      static_cast<long long>(tuning.column_budget_bytes >> 20));
  std::printf("%-9s %-22s %5s %6s | %8s %8s %5s | %8s %8s %5s | plan\n", "net", "layer", "HW", "K", "fwd GF/s", "gemm",
              "ratio", "bwd GF/s", "gemm", "ratio");

  std::vector<Result> results;
  for (const ConvShape& s : all_shapes()) {
    if (nets.find(s.net) == std::string::npos) continue;
    if (!filter.empty() && (s.net + "/" + s.name).find(filter) == std::string::npos) continue;
    auto doc = std::make_shared<config::Document>(config::Document::parse(
        fmt::format("[layer {}]\nnum_output = {}\nkernel_size = {}\nstride = {}\npad = {}\ngroup = {}\n", s.name,
                    s.out_c, s.kernel, s.stride, s.pad, s.group),
        "bench_conv"));
    LayerSpec spec;
    spec.name = s.name;
    spec.type = "Convolution";
    spec.options = doc->find("layer", s.name);
    auto layer = LayerRegistry::instance().create(spec);
    Blob x(Shape{batch, s.in_c, s.size, s.size}), y;
    x.data().fill(0.5f);
    layer->setup({&x}, {&y});
    layer->reshape({&x}, {&y});
    y.diff().fill(0.25f);

    Result r;
    r.shape = s;
    r.plan = dynamic_cast<ConvolutionLayer&>(*layer).plan();
    const int64_t hw = s.out_size() * s.out_size();
    const int64_t m = s.out_c / s.group, k = s.in_c / s.group * s.kernel * s.kernel, n = hw * batch;
    r.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * s.group;
    r.fwd = median_seconds(runs, [&] { layer->forward({&x}, {&y}); });
    r.bwd = median_seconds(runs, [&] { layer->backward({&y}, {true}, {&x}); });
    using blas::Trans;
    if (skip_gemm) r.gemm_fwd = r.gemm_wgrad = r.gemm_dgrad = 1e-30;
    if (!skip_gemm) r.gemm_fwd = s.group * gemm_seconds(Trans::no, Trans::no, m, n, k, 'n', gemm_floats, runs);
    if (!skip_gemm) r.gemm_wgrad = s.group * gemm_seconds(Trans::no, Trans::yes, m, k, n, 'k', gemm_floats, runs);
    if (!skip_gemm) r.gemm_dgrad = s.group * gemm_seconds(Trans::yes, Trans::no, k, n, m, 'n', gemm_floats, runs);
    results.push_back(r);

    const double fwd = r.flops / r.fwd * 1e-9, gf = r.flops / r.gemm_fwd * 1e-9;
    const double bwd = 2 * r.flops / r.bwd * 1e-9, gb = 2 * r.flops / (r.gemm_wgrad + r.gemm_dgrad) * 1e-9;
    const std::string plan = r.plan.images_per_chunk > 1 ? fmt::format("{} images", r.plan.images_per_chunk)
                                                         : fmt::format("{} rows", r.plan.rows_per_band);
    if (skip_gemm)  // no reference GEMMs: their columns stay empty
      std::printf("%-9s %-22s %5lld %6lld | %8.1f %8s %5s | %8.1f %8s %5s | %s\n", s.net.c_str(), s.name.c_str(),
                  static_cast<long long>(hw), static_cast<long long>(k), fwd, "-", "-", bwd, "-", "-", plan.c_str());
    else
      std::printf("%-9s %-22s %5lld %6lld | %8.1f %8.1f %5.2f | %8.1f %8.1f %5.2f | %s\n", s.net.c_str(),
                  s.name.c_str(), static_cast<long long>(hw), static_cast<long long>(k), fwd, gf, fwd / gf, bwd, gb,
                  bwd / gb, plan.c_str());
    std::fflush(stdout);
  }

  double total_fwd = 0, total_bwd = 0, total_gf = 0, total_gb = 0;
  for (const auto& r : results)
    total_fwd += r.fwd, total_bwd += r.bwd, total_gf += r.gemm_fwd, total_gb += r.gemm_wgrad + r.gemm_dgrad;
  if (!results.empty() && !skip_gemm)
    std::printf("time-weighted ratio: forward %.2f, backward %.2f\n", total_gf / total_fwd, total_gb / total_bwd);

  const std::string json = arg_value(argc, argv, "json", "");
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\n  \"batch\": " << batch << ",\n  \"threads\": " << compute_threads() << ",\n  \"kernel\": \""
        << blas::kernel_name() << "\",\n  \"runs\": " << runs << ",\n  \"layers\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      out << fmt::format(
          "    {{\"net\": \"{}\", \"layer\": \"{}\", \"in_c\": {}, \"size\": {}, \"out_c\": {}, \"kernel\": {}, "
          "\"stride\": {}, \"pad\": {}, \"group\": {}, \"gflop_forward\": {:.4f}, \"forward_s\": {:.6f}, "
          "\"backward_s\": {:.6f}, \"gemm_forward_s\": {:.6f}, \"gemm_weight_grad_s\": {:.6f}, "
          "\"gemm_data_grad_s\": {:.6f}, \"forward_ratio\": {:.4f}, \"backward_ratio\": {:.4f}}}{}\n",
          r.shape.net, r.shape.name, r.shape.in_c, r.shape.size, r.shape.out_c, r.shape.kernel, r.shape.stride,
          r.shape.pad, r.shape.group, r.flops * 1e-9, r.fwd, r.bwd, r.gemm_fwd, r.gemm_wgrad, r.gemm_dgrad,
          r.gemm_fwd / r.fwd, (r.gemm_wgrad + r.gemm_dgrad) / r.bwd, i + 1 < results.size() ? "," : "");
    }
    out << "  ]\n}\n";
  }
  return 0;
}
