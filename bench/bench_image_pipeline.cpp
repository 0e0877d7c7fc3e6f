// Image input pipeline throughput: how many training samples per second taihu
// reads, decodes and augments from a folder of JPEG class folders, the
// ImageNet recipe (shorter side resized to 256, antialiased; random 224x224
// crop; random horizontal flip; mean/std normalisation into CHW floats), as
// bench/image_pipeline_torch.py measures torchvision's. Cases, each over every
// image of the folder (after one untimed pass that warms the page cache and
// the threads' buffers):
//   read       the file's bytes only (page cache)
//   decode     read + decode_image at the DCT scale the transform allows
//              (what ImageDataset does: 1/2 for a shorter side >= 512)
//   decode_full  read + decode at full size (as PIL without draft())
//   decode_by_size  (not in the default list) decode at full size and at the
//              DCT scale, per stored image size: what DCT scaling saves where
//              it applies (median of 5 passes per size)
//   transform  ImageTransform::apply on images decoded beforehand (resize
//              window + crop + flip + normalise), one thread
//   dataset    ImageDataset::read_sample(index, out, draw) with a draw key
//              (the training view), on T threads reading disjoint samples
//   feed       the actor feed (make_actor_batch_feed: batch loader + D
//              decoder actors), batch 32, shuffled and augmented; images/s
//              the consumer receives, timed from the 4th batch to the end of
//              an epoch (drop_last), so pipeline start-up is left out, as in
//              the PyTorch script
//
//   bench_image_pipeline --dir=FOLDER [--threads=1,2] [--decoders=1,2] [--batch=32]
//                        [--prefetch=4] [--repeats=1] [--cases=read,decode,...]
//                        [--json=FILE] [--csv=FILE] [--label=TEXT]
//
// One JSON object per case and setting is appended to --json (a CSV row to
// --csv); with --repeats > 1 the figure is the median of the repeats.
// bench/compare_image_pipeline.sh runs it side by side with PyTorch.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/compute/run_plan.hpp"
#include "actors/feed/batch_loader.hpp"
#include "apps/actor_system.hpp"
#include "bench/bench_args.hpp"
#include "core/common/random.hpp"
#include "core/config/config.hpp"
#include "core/data/image_codec.hpp"
#include "core/data/image_dataset.hpp"
#include "core/data/image_index.hpp"
#include "core/data/image_transform.hpp"
#include "core/tensor/tensor.hpp"

using namespace taihu;
using Clock = std::chrono::steady_clock;
using taihu::bench::arg_value;
using taihu::bench::number_list;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// As ImageDataset reads a file (image_dataset.cpp, read_file).
std::vector<uint8_t> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// The draw key of sample `index` in pass `pass`: never 0 (0 is the evaluation view).
uint64_t draw_key(int64_t index, int pass) {
  uint64_t x = static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(pass) + 1;
  const uint64_t key = splitmix64(x);
  return key == 0 ? 1 : key;
}

struct Result {
  std::string scenario;
  int threads = 1;  // threads of the case (decoders for the feed)
  int64_t images = 0;
  std::vector<double> rates;  // images/s per repeat
};

struct Output {
  std::string json;
  std::string csv;
  std::string label;
  int64_t batch = 0;
  int prefetch = 0;

  void write(const Result& r) const {
    const double rate = median_of(r.rates);
    std::printf("%-12s %8d %8lld %12.1f %10.3f   [%s]\n", r.scenario.c_str(), r.threads,
                static_cast<long long>(r.images), rate, 1e3 / rate, fmt::format("{:.1f}", fmt::join(r.rates, " ")).c_str());
    std::fflush(stdout);
    if (!json.empty()) {
      std::ofstream(json, std::ios::app) << fmt::format(
          "{{\"system\": \"taihu\", \"label\": \"{}\", \"case\": \"{}\", \"threads\": {}, \"images\": {}, "
          "\"batch\": {}, \"prefetch\": {}, \"images_per_second\": {:.2f}, \"ms_per_image\": {:.4f}, "
          "\"repeats\": [{:.2f}]}}\n",
          label, r.scenario, r.threads, r.images, r.scenario == "feed" ? batch : 0, r.scenario == "feed" ? prefetch : 0,
          rate, 1e3 / rate, fmt::join(r.rates, ", "));
    }
    if (!csv.empty()) {
      const bool fresh = !std::filesystem::exists(csv);
      std::ofstream out(csv, std::ios::app);
      if (fresh) out << "system,label,case,threads,images,images_per_second,ms_per_image\n";
      out << fmt::format("taihu,{},{},{},{},{:.2f},{:.4f}\n", label, r.scenario, r.threads, r.images, rate, 1e3 / rate);
    }
  }
};

// Runs `body(begin, end)` over [0, n) split into `threads` interleaved shares
// (thread t takes t, t + T, ...), each on a thread of its own; returns images/s.
template <class Body>
double timed_parallel(int64_t n, int threads, const Body& body) {
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int64_t i = t; i < n; i += threads) body(i);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  start = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& thread : pool) thread.join();
  return static_cast<double>(n) / seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  const std::filesystem::path dir = arg_value(argc, argv, "dir", "");
  if (dir.empty()) {
    std::fprintf(stderr, "usage: bench_image_pipeline --dir=FOLDER_OF_CLASS_FOLDERS [options]\n");
    return 2;
  }
  const auto thread_counts = number_list(arg_value(argc, argv, "threads", "1,2"));
  const auto decoder_counts = number_list(arg_value(argc, argv, "decoders", "1,2"));
  const int repeats = std::stoi(arg_value(argc, argv, "repeats", "1"));
  const std::string cases =
      fmt::format(",{},", arg_value(argc, argv, "cases", "read,decode,decode_full,transform,dataset,feed"));
  const auto wants = [&](const char* name) { return cases.find(fmt::format(",{},", name)) != std::string::npos; };
  Output output;
  output.json = arg_value(argc, argv, "json", "");
  output.csv = arg_value(argc, argv, "csv", "");
  output.label = arg_value(argc, argv, "label", "");
  output.batch = std::stoll(arg_value(argc, argv, "batch", "32"));
  output.prefetch = std::stoi(arg_value(argc, argv, "prefetch", "4"));

  // torchvision's ImageNet recipe.
  TransformConfig transform;
  transform.channels = 3;
  transform.resize_shorter = 256;
  transform.crop_height = transform.crop_width = 224;
  transform.mirror = true;
  transform.preprocess.scale = 1.0f / 255.0f;
  transform.preprocess.mean = {0.485f, 0.456f, 0.406f};
  transform.preprocess.std = {0.229f, 0.224f, 0.225f};

  ImageIndex index = list_image_folder(dir);
  const int64_t n = index.size();
  const std::vector<std::filesystem::path> files = index.files;
  const int classes = static_cast<int>(index.classes.size());
  auto dataset = std::make_shared<const ImageDataset>(image_file_records(std::move(index), 3), transform, classes,
                                                      fmt::format("images in {}", dir.string()));
  const ImageTransform transformer(transform);
  const int scaled_side = transformer.decode_shorter_side();
  const int64_t floats = dataset->sample_shape().count();

  int64_t bytes_total = 0;
  for (const auto& file : files) bytes_total += static_cast<int64_t>(std::filesystem::file_size(file));
  std::printf("%lld images in %d classes, %.1f MB (mean %.1f KB); JPEGs with a shorter side >= %d decode at 1/2 "
              "scale or less\n",
              static_cast<long long>(n), classes, static_cast<double>(bytes_total) / 1e6,
              static_cast<double>(bytes_total) / 1e3 / static_cast<double>(n), 2 * scaled_side);
  std::printf("%-12s %8s %8s %12s %10s   %s\n", "case", "threads", "images", "images/s", "ms/image", "repeats");

  // ---------------------------------------------------------------- single-thread splits
  const auto repeat = [&](const char* name, int threads, const auto& body) {
    Result r{name, threads, n, {}};
    timed_parallel(n, threads, body);  // warm: page cache, thread-local buffers
    for (int k = 0; k < repeats; ++k) r.rates.push_back(timed_parallel(n, threads, body));
    output.write(r);
  };
  if (wants("read")) {
    std::vector<size_t> sink(static_cast<size_t>(n));
    repeat("read", 1, [&](int64_t i) { sink[static_cast<size_t>(i)] = file_bytes(files[static_cast<size_t>(i)]).size(); });
  }
  if (wants("decode")) {
    repeat("decode", 1, [&](int64_t i) {
      const Image image = decode_image(file_bytes(files[static_cast<size_t>(i)]), 3, scaled_side);
      (void)image;
    });
  }
  if (wants("decode_full")) {
    std::vector<char> large(static_cast<size_t>(n), 0);  // shorter side >= 2 x 256: a scaled decode shrinks it
    repeat("decode_full", 1, [&](int64_t i) {
      const Image image = decode_image(file_bytes(files[static_cast<size_t>(i)]), 3, 0);
      large[static_cast<size_t>(i)] = scaled_side > 0 && std::min(image.height, image.width) >= 2 * scaled_side;
    });
    const auto count = std::count(large.begin(), large.end(), 1);
    std::printf("  (%lld of %lld images, %.0f%%, have a shorter side >= %d: decode reads them at 1/2 scale or less)\n",
                static_cast<long long>(count), static_cast<long long>(n),
                100.0 * static_cast<double>(count) / static_cast<double>(n), 2 * scaled_side);
  }
  if (wants("decode_by_size")) {
    std::map<std::pair<int, int>, std::vector<std::vector<uint8_t>>> by_size;  // (width, height) -> files
    for (const auto& file : files) {
      auto bytes = file_bytes(file);
      const Image image = decode_image(bytes, 3, 0);
      by_size[{image.width, image.height}].push_back(std::move(bytes));
    }
    std::printf("%-10s %6s %12s %14s %8s\n", "size", "images", "full ms", "scaled ms", "saved");
    for (const auto& [size, all] : by_size) {
      double ms[2];
      int scaled_width = 0;
      for (int scaled_decode = 0; scaled_decode < 2; ++scaled_decode) {
        std::vector<double> passes;
        for (int pass = 0; pass < 6; ++pass) {
          const auto start = Clock::now();
          for (const auto& bytes : all) {
            const Image image = decode_image(bytes, 3, scaled_decode ? scaled_side : 0);
            scaled_width = image.width;
          }
          if (pass > 0) passes.push_back(seconds_since(start) * 1e3 / static_cast<double>(all.size()));
        }
        ms[scaled_decode] = median_of(passes);
      }
      std::printf("%4dx%-5d %6zu %12.3f %8.3f (1/%d) %7.1f%%\n", size.first, size.second, all.size(), ms[0], ms[1],
                  size.first / scaled_width, 100.0 * (1.0 - ms[1] / ms[0]));
      if (!output.json.empty()) {
        std::ofstream(output.json, std::ios::app) << fmt::format(
            "{{\"system\": \"taihu\", \"label\": \"{}\", \"case\": \"decode_by_size\", \"width\": {}, "
            "\"height\": {}, \"images\": {}, \"full_ms\": {:.4f}, \"scaled_ms\": {:.4f}, \"scale\": {}}}\n",
            output.label, size.first, size.second, all.size(), ms[0], ms[1], size.first / scaled_width);
      }
    }
  }
  if (wants("transform")) {
    std::vector<Image> images(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      images[static_cast<size_t>(i)] = decode_image(file_bytes(files[static_cast<size_t>(i)]), 3, scaled_side);
    std::vector<float> out(static_cast<size_t>(floats));
    int pass = 0;
    Result r{"transform", 1, n, {}};
    for (int k = 0; k <= repeats; ++k, ++pass) {
      const double rate = timed_parallel(n, 1, [&](int64_t i) {
        transformer.apply(images[static_cast<size_t>(i)], out.data(), draw_key(i, pass));
      });
      if (k > 0) r.rates.push_back(rate);
    }
    output.write(r);
  }

  // ---------------------------------------------------------------- ImageDataset, T threads
  if (wants("dataset")) {
    for (double t : thread_counts) {
      const int threads = static_cast<int>(t);
      std::vector<std::vector<float>> outs(static_cast<size_t>(threads), std::vector<float>(static_cast<size_t>(floats)));
      int pass = 0;
      Result r{"dataset", threads, n, {}};
      for (int k = 0; k <= repeats; ++k, ++pass) {
        const double rate = timed_parallel(n, threads, [&](int64_t i) {
          float* out = outs[static_cast<size_t>(i % threads)].data();
          if (dataset->read_sample(i, out, draw_key(i, pass)) < 0) std::abort();
        });
        if (k > 0) r.rates.push_back(rate);
      }
      output.write(r);
    }
  }

  // ---------------------------------------------------------------- the actor feed
  if (wants("feed")) {
    for (double d : decoder_counts) {
      const int decoders = static_cast<int>(d);
      Result r{"feed", decoders, 0, {}};
      for (int k = 0; k <= repeats; ++k) {
        // A fresh system per run, as taihu-train has one per process: its
        // decoder pool is made with this run's `decoders`.
        // Configured as taihu-train's (scheduler threads, policy).
        caf::actor_system_config config;
        app::configure_actor_system(config, app::actor_system_settings(config::Document::parse("", "bench")));
        caf::actor_system system{config};
        BatchOptions options;
        options.batch_size = output.batch;
        options.shuffle = true;
        options.augment = true;
        options.drop_last = true;
        options.prefetch = output.prefetch;
        options.decoders = decoders;
        options.seed = static_cast<uint64_t>(k + 1);
        auto feed = feed::make_actor_batch_feed(system, dataset, options);
        Tensor data, labels;
        // Timed from the 4th batch (start-up left out), or from the start in an epoch of few batches.
        const int64_t skipped_batches = std::clamp<int64_t>(feed->batches_per_epoch() - 1, 0, 3);
        int64_t batches = 0;
        Clock::time_point start = Clock::now();
        while (feed->next(data, labels)) {
          if (++batches == skipped_batches) start = Clock::now();
        }
        const double rate =
            static_cast<double>((batches - skipped_batches) * output.batch) / seconds_since(start);
        r.images = (batches - skipped_batches) * output.batch;
        if (k > 0) r.rates.push_back(rate);  // the first run warms up
      }
      output.write(r);
    }
  }
  return 0;
}
