// Selection speed for residual gradient compression (issue 5), and bytes on
// the wire per iteration, sparse vs dense.
//
//   bench_selection [--n=16777216] [--density=0.001] [--runs=7] [--dist=normal|laplace]
//   bench_selection --wire=LAYERS.txt [--density=0.001] [--bucket_mb=25]
// LAYERS.txt is `scripts/net_params.py -v config/nets/NET.ini` output (one
// row per layer; its params count is taken as one tensor). The last column
// is what taihu's shard actors send with those fusion buckets
// (actors/sync/bucket_shards.hpp): a bucket's sparse layers go by the packed
// ring allgather, its dense layers by ring allreduce.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/common/random.hpp"
#include "core/compress/compressor.hpp"
#include "core/compress/policy.hpp"
#include "core/compress/select.hpp"

using namespace taihu;
using namespace taihu::compress;

namespace {

volatile float sink;

double time_ms(const std::function<void()>& f) {
  const auto a = std::chrono::steady_clock::now();
  f();
  const auto b = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double median_ms(int runs, const std::function<void()>& f) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) t.push_back(time_ms(f));
  return median(t);
}

// Median time of f and the median of f's time over a read pass timed right
// before it: the pairs see the same load from the other users of the machine.
struct Paired {
  double ms = 0;
  double per_read = 0;
};
Paired paired(int runs, const std::function<void()>& read, const std::function<void()>& f) {
  std::vector<double> t, ratio;
  for (int r = 0; r < runs; ++r) {
    const double base = time_ms(read);
    t.push_back(time_ms(f));
    ratio.push_back(t.back() / base);
  }
  return {median(t), median(ratio)};
}

std::vector<float> make_data(std::size_t n, const std::string& dist, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(n);
  if (dist == "laplace") {
    for (auto& v : x) {
      const float u = rng.uniform() - 0.5f;
      v = (u < 0 ? 1.0f : -1.0f) * std::log(1.0f - 2.0f * std::fabs(u) + 1e-12f);
      if (rng.below(1000) == 0) v *= 10.0f;
    }
  } else {
    for (auto& v : x) v = rng.normal();
  }
  return x;
}

void selection(int argc, char** argv) {
  const auto n = static_cast<std::size_t>(std::stoull(bench::arg_value(argc, argv, "n", "16777216")));
  const double density = std::stod(bench::arg_value(argc, argv, "density", "0.001"));
  const int runs = std::stoi(bench::arg_value(argc, argv, "runs", "7"));
  const std::string dist = bench::arg_value(argc, argv, "dist", "normal");
  const auto x = make_data(n, dist, 42);
  const std::size_t k = count_for_density(n, density);
  std::printf("selection: n = %zu, density = %g, k = %zu, %s data, median of %d runs\n", n, density, k,
              dist.c_str(), runs);

  const double read_sum = median_ms(runs, [&] { sink = sum_pass(x); });
  const double read_max = median_ms(runs, [&] { sink = max_abs_pass(x); });
  const double read = std::min(read_sum, read_max);
  std::vector<float> copy(n);
  const double nth = median_ms(runs, [&] {
    for (std::size_t i = 0; i < n; ++i) copy[i] = std::fabs(x[i]);
    std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k), copy.end(), std::greater<float>());
    sink = copy[k];
  });

  std::printf("%-40s %9s %9s %9s %8s %7s\n", "method", "ms", "x read", "nth/this", "count", "cnt/k");
  auto row = [&](const char* name, Paired p, double count) {
    std::printf("%-40s %9.2f %9.2f %9.1f %8.0f %7.3f\n", name, p.ms, p.per_read, nth / p.ms, count,
                count / static_cast<double>(k));
  };
  auto read_pass = [&] { sink = sum_pass(x); };
  row("read pass: sum", {read_sum, 1.0}, 0);
  row("read pass: max |x|", paired(runs, read_pass, [&] { sink = max_abs_pass(x); }), 0);
  row("count pass (#|x| > t)", paired(runs, read_pass, [&] { sink = count_above(x, Key::magnitude, 3.0f); }), 0);
  row("std::nth_element on a copy of |x|", {nth, nth / read}, static_cast<double>(k));

  SelectScratch scratch;
  Selection out;
  SelectInfo info;
  auto run = [&](const char* name, const std::function<void()>& f) {
    const Paired p = paired(runs, read_pass, f);  // before reading out.size()
    row(name, p, static_cast<double>(out.size()));
  };
  const double reference = median_ms(3, [&] { exact_topk_reference(x, k, Key::magnitude, out); });
  row("exact top-k, reference (nth, indices)", {reference, reference / read}, static_cast<double>(out.size()));
  run("exact top-k (sample + 1 pass)", [&] { exact_topk(x, k, Key::magnitude, out, scratch, &info); });
  run("trimmed top-k", [&] { trimmed_topk(x, k, Key::magnitude, out, scratch, &info); });
  run("binary search, plain passes", [&] { threshold_search_plain(x, k, Key::magnitude, out, 1e-4, &info); });
  std::printf("%-40s probes %d, passes %d\n", "", info.probes, info.full_passes);
  run("binary search (sample + 1 pass)", [&] { threshold_search(x, k, Key::magnitude, out, scratch, 1e-4, &info); });
  std::printf("%-40s probes %d, passes %d, fallback %d\n", "", info.probes, info.full_passes, int(info.fallback));
  run("binary search, ASQ sign (x > t)", [&] { threshold_search(x, k, Key::positive, out, scratch, 1e-4, &info); });
  {
    ThresholdReuse reuse(1 << 30);
    reuse.select(x, k, Key::magnitude, out, scratch);
    run("threshold reuse (cached t, 1 pass)", [&] { reuse.select(x, k, Key::magnitude, out, scratch, &info); });
    ThresholdReuse every5(5);
    const auto five = paired(runs, read_pass, [&] {
      for (int i = 0; i < 5; ++i) every5.select(x, k, Key::magnitude, out, scratch);
    });
    row("threshold reuse, interval 5 (per call)", {five.ms / 5, five.per_read / 5}, static_cast<double>(out.size()));
  }
  // A whole compressor step on one 16M bucket: accumulate, select, pack;
  // as two calls (accumulate, emit) and as the fused step (one pass).
  for (int kind = 0; kind < 3; ++kind) {
    Options o;
    o.method = Method::bsearch;
    o.schedule.density = density;
    o.momentum = kind == 0 ? 0.0f : 0.9f;
    o.nesterov = kind == 2;
    const char* names[] = {"", ", momentum corr.", ", Nesterov corr."};
    for (bool fused : {false, true}) {
      Compressor c(n, o);
      std::vector<std::uint32_t> msg;
      const Paired p = paired(runs, read_pass, [&] {
        PackedWriter w(msg, n);
        if (fused) {
          c.step(x, 0.25f, w, 0);
        } else {
          c.accumulate(x, 0.25f);
          c.emit(w, 0);
        }
      });
      const std::string name = std::string(fused ? "fused step" : "accumulate + emit") + names[kind];
      row(name.c_str(), p, static_cast<double>(c.last_sent_entries()));
    }
  }
  {
    Compressor c(n, Options{});
    row("  accumulate only", paired(runs, read_pass, [&] { c.accumulate(x, 0.25f); }), 0);
  }
  {
    std::vector<float> dense(n);
    std::vector<std::uint32_t> msg;
    PackedWriter w(msg, n);
    threshold_search(x, k, Key::magnitude, out, scratch);
    w.sparse(0, n, out.index, out.value);
    std::vector<std::span<const std::uint32_t>> eight(8, std::span<const std::uint32_t>(msg));
    row("decompress_sum of 8 messages", paired(runs, read_pass, [&] { decompress_sum(eight, dense); }),
        8.0 * static_cast<double>(out.size()));
  }
  Rng rng(1);
  run("DGC sampling", [&] { dgc_sample_select(x, k, Key::magnitude, rng, out, scratch, &info); });
  run("random-k", [&] { random_k(x, k, rng, out); });
}

struct LayerRow {
  std::string name;
  std::size_t params;
};

std::vector<LayerRow> read_layers(const std::string& path) {
  std::ifstream in(path);
  std::vector<LayerRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::vector<std::string> tok;
    for (std::string t; s >> t;) tok.push_back(t);
    if (tok.size() < 5 || tok[0] == "layer" || line.find(':') != std::string::npos) continue;
    std::string digits;
    for (char c : tok[tok.size() - 2])
      if (c != ',') digits += c;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto p = std::stoull(digits);
    if (p > 0) rows.push_back({tok[0], p});
  }
  return rows;
}

void wire(int argc, char** argv) {
  const std::string path = bench::arg_value(argc, argv, "wire", "");
  const double density = std::stod(bench::arg_value(argc, argv, "density", "0.001"));
  const auto layers = read_layers(path);
  Policy policy = Policy::from_config(config::Document::parse(
      "[compress]\nmethod = bsearch\ndensity = " + std::to_string(density) + "\n", "bench"));
  // Build one message per layer from N(0,1) data with the real selector: its size is what goes on the wire.
  double total = 0, sparse_n = 0, dense_n = 0, msg_bytes = 0, asq_bytes = 0, sent_entries = 0;
  std::vector<float> g;
  std::vector<std::uint32_t> msg;
  std::vector<double> layer_bytes;  // packed bytes of each layer's block
  std::vector<bool> layer_sparse;
  for (const auto& l : layers) {
    total += static_cast<double>(l.params);
    const Options o = policy.choose({l.name, l.params, 2, false}, 8);
    layer_sparse.push_back(o.method != Method::dense);
    if (o.method == Method::dense) {
      dense_n += static_cast<double>(l.params);
      layer_bytes.push_back(16.0 + 4.0 * static_cast<double>(l.params));
      continue;
    }
    sparse_n += static_cast<double>(l.params);
    g = make_data(l.params, "normal", l.params);
    Compressor c(l.params, o);
    c.accumulate(g);
    PackedWriter w(msg, l.params);
    c.emit(w, 0);
    msg_bytes += static_cast<double>(packed_bytes(msg));
    layer_bytes.push_back(static_cast<double>(packed_bytes(msg)) - 16.0);  // less the message header
    sent_entries += static_cast<double>(c.last_sent_entries());
    asq_bytes += 4.0 * (4 + 4 + c.last_sent_entries() + 1);
  }
  std::printf("%s: %zu layers with parameters, %.0f parameters; sparse (>= %zu, bsearch d = %g): %.0f in %s, dense: %.0f\n",
              path.c_str(), layers.size(), total, policy.min_elements(), density, sparse_n, "layers", dense_n);
  std::printf("bsearch sent %.0f entries for k = %.0f (x%.3f); packed message %.3f MB\n", sent_entries,
              density * sparse_n, sent_entries / (density * sparse_n), msg_bytes / 1e6);
  // Fusion buckets as collectives/buckets.cpp makes them: backward order (last layer first), a layer's
  // params together, a bucket closed when the next layer would overflow bucket_mb.
  const double bucket_bytes = std::stod(bench::arg_value(argc, argv, "bucket_mb", "25")) * 1024 * 1024;
  struct BucketRow {
    double dense = 0, message = 16;  // dense floats; the sparse layers' packed message, header included
    bool sparse = false;
  };
  std::vector<BucketRow> buckets(1);
  std::vector<double> elements(1, 0.0);
  for (std::size_t i = layers.size(); i-- > 0;) {
    const double n = static_cast<double>(layers[i].params);
    if (elements.back() > 0 && bucket_bytes > 0 && (elements.back() + n) * 4 > bucket_bytes) {
      buckets.emplace_back();
      elements.push_back(0);
    }
    elements.back() += n;
    if (layer_sparse[i]) {
      buckets.back().message += layer_bytes[i];
      buckets.back().sparse = true;
    } else {
      buckets.back().dense += n;
    }
  }
  int allgathered = 0;
  for (const auto& b : buckets) allgathered += b.sparse;
  std::printf("%zu fusion buckets of <= %g MB, %d of them with a sparse layer (packed allgather)\n", buckets.size(),
              bucket_bytes / 1024 / 1024, allgathered);
  std::printf("%3s %14s %16s %16s %16s %16s %9s %16s %9s\n", "P", "dense ring MB", "formula s=8 MB", "measured MB",
              "ASQ idx+mean MB", "RGC total MB", "RGC/dense", "taihu shards MB", "/dense");
  for (int p : {4, 8, 16}) {
    const double dense = ring_allreduce_bytes(total, p);
    const double formula = sparse_allgather_bytes(density * sparse_n, 8, p);
    const double measured = (p - 1) * msg_bytes;
    const double measured_asq = (p - 1) * asq_bytes;
    const double rgc = measured + ring_allreduce_bytes(dense_n, p);
    double shards = 0;
    for (const auto& b : buckets)
      shards += (b.sparse ? (p - 1) * b.message : 0.0) + ring_allreduce_bytes(b.dense, p);
    std::printf("%3d %14.2f %16.3f %16.3f %16.3f %16.3f %8.2f%% %16.3f %8.2f%%\n", p, dense / 1e6, formula / 1e6,
                measured / 1e6, measured_asq / 1e6, rgc / 1e6, 100 * rgc / dense, shards / 1e6, 100 * shards / dense);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!bench::arg_value(argc, argv, "wire", "").empty())
    wire(argc, argv);
  else
    selection(argc, argv);
}
