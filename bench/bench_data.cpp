// Data pipeline throughput: loading Fashion-MNIST, and batches per second
// from BatchSource for Fashion-MNIST and ImageNet-shaped synthetic data,
// synchronous and prefetched (with a simulated compute step per batch).
//
//   bench_data [compute_ms]     (default 0: measures the pipeline alone)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "core/config/config.hpp"
#include "core/data/batch_source.hpp"
#include "core/data/dataset.hpp"

using namespace taihu;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void run(const char* name, std::shared_ptr<const Dataset> data, int64_t batch_size, int batches, int prefetch,
         int compute_ms) {
  BatchSource source(std::move(data), BatchOptions{.batch_size = batch_size, .prefetch = prefetch, .seed = 1});
  Tensor x, y;
  const auto start = Clock::now();
  int done = 0;
  double waiting = 0;  // time the consumer spends inside next(): the input stall
  while (done < batches) {
    const auto asked = Clock::now();
    const bool got = source.next(x, y);
    waiting += seconds_since(asked);
    if (!got) continue;
    if (compute_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(compute_ms));
    ++done;
  }
  const double s = seconds_since(start);
  std::printf("%-22s batch %4lld  prefetch %d  %8.2f ms/batch (%6.2f ms in next)  %9.0f samples/s\n", name,
              static_cast<long long>(batch_size), prefetch, 1e3 * s / batches, 1e3 * waiting / batches,
              batches * batch_size / s);
}

}  // namespace

int main(int argc, char** argv) {
  const int compute_ms = argc > 1 ? std::atoi(argv[1]) : 0;
  if (std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    auto doc = config::Document::parse("[data]\nsource = fashion-mnist\n", "bench");
    const auto start = Clock::now();
    auto train = make_dataset(doc, doc.section("data"), Split::train);
    std::printf("Fashion-MNIST train set (60000 gzipped images) loaded in %.3f s\n", seconds_since(start));
    for (int prefetch : {0, 4}) run("fashion-mnist", train, 64, 500, prefetch, compute_ms);
  }
  auto doc = config::Document::parse("[data]\nsource = synthetic\nshape = 3 224 224\nclasses = 1000\n", "bench");
  auto imagenet = make_dataset(doc, doc.section("data"), Split::train);
  for (int prefetch : {0, 4}) run("synthetic 3x224x224", imagenet, 32, 60, prefetch, compute_ms);
}
