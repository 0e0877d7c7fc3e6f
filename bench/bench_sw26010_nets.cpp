// Simulated SW26010 time per layer (forward, backward) for the swCaffe
// networks at swCaffe's batch sizes, each core group running a quarter of the
// batch (the slowest quarter is reported), plus the 4-CG gradient sum.
//   bench_sw26010_nets [--nets=alexnet-bn,vgg16,resnet50,googlenet] [--batch=N]
//                      [--numerics=0|1] [--config=FILE] [--layers=1] [--lockstep-range=1]
// --lockstep-range=1 (the default) also times each net at the corners of the
// lock-step parameters' ranges (devices/sw26010/lockstep_range.hpp) and prints
// the iteration's and images/s's range.
// --numerics=1 also computes every kernel's numbers on the host (on zeros),
// which measures how long simulating an iteration takes; the simulated times
// are the same either way. Exit status 2: bad input (a net or batch whose
// layers the kernels cannot lay out in LDM, named; a bad config or net file).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/common/error.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/chip.hpp"
#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/layer_timing.hpp"
#include "devices/sw26010/lockstep_range.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {

struct LayerTime {
  std::string name, type, method;
  std::int64_t forward = 0, backward = 0;
};

int run(int argc, char** argv) {
  const std::string config_path = bench::arg_value(argc, argv, "config", "");
  const Params params = config_path.empty() ? Params::defaults() : Params::load(config_path);
  const bool numerics = bench::arg_value(argc, argv, "numerics", "0") == "1";
  const bool per_layer = bench::arg_value(argc, argv, "layers", "1") == "1";
  const bool lockstep_range = bench::arg_value(argc, argv, "lockstep-range", "1") == "1";
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
    Scratch buf(numerics);
    std::map<std::string, ConvChoice> choices;
    std::vector<LayerTime> times;
    std::int64_t params_total = 0;
    const auto host_start = std::chrono::steady_clock::now();

    // the layers with the layouts swCaffe's transform layer leaves between them
    const std::vector<LayerShape> shapes = net_layer_shapes(net, q, params, &choices);
    for (std::size_t i = 0; i < net.num_layers(); ++i) {
      Layer& layer = net.layer(i);
      for (const auto& p : layer.params()) params_total += p.blob->count();
      LayerTime t{layer.name(), layer.type(), "", 0, 0};
      const LayerTiming timing = time_layer(cg, shapes[i], buf, &choices);
      if (!timing.simulated) continue;
      t.method = timing.method;
      t.forward = timing.forward;
      t.backward = timing.backward;

      times.push_back(t);
    }
    // CG 0's MPE sums the other 3 groups' weight gradients (P §V-A), then the
    // SGD step (momentum, weight decay) runs, mostly on the MPE (iteration.hpp)
    const std::int64_t reduce = gradient_sum_mpe(cg, params_total);
    const std::int64_t solver = sgd_update(cg, params_total);
    const double host_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();

    std::int64_t fwd = 0, bwd = 0;
    for (const auto& t : times) fwd += t.forward, bwd += t.backward;
    const double iteration = params.seconds(double(fwd + bwd + reduce + solver));
    std::printf("\n%s, batch %lld (%lld per core group), %lld learnable parameters\n", net_name.c_str(),
                (long long)batch, (long long)q, (long long)params_total);
    if (per_layer) {
      // the method column as wide as its longest entry ("explicit (wgrad implicit, dgrad implicit)")
      int width = 9;
      for (const auto& t : times) width = std::max(width, int(t.method.size()));
      std::printf("  %-28s %-16s %-*s %12s %12s\n", "layer", "type", width, "method", "forward ms", "backward ms");
      for (const auto& t : times)
        std::printf("  %-28s %-16s %-*s %12.3f %12.3f\n", t.name.c_str(), t.type.c_str(), width, t.method.c_str(),
                    1e3 * params.seconds(double(t.forward)), 1e3 * params.seconds(double(t.backward)));
      std::printf("  %-28s %-16s %-*s %12s %12.3f\n", "(gradient sum, CG 0's MPE)", "", width, "", "",
                  1e3 * params.seconds(double(reduce)));
      std::printf("  %-28s %-16s %-*s %12s %12.3f\n", "(SGD update)", "", width, "", "",
                  1e3 * params.seconds(double(solver)));
    }
    std::printf("  simulated: forward %.1f ms, backward %.1f ms (+ gradient sum %.1f ms, SGD update %.1f ms), iteration "
                "%.1f ms, %.1f images/s\n",
                1e3 * params.seconds(double(fwd)), 1e3 * params.seconds(double(bwd)), 1e3 * params.seconds(double(reduce)),
                1e3 * params.seconds(double(solver)), 1e3 * iteration, double(batch) / iteration);
    std::printf("  host time for the simulated iteration: %.1f s (%s, one core group; x4 for the chip)\n",
                host_seconds, numerics ? "with numerics" : "timing only");
    if (lockstep_range) {
      // the corners of the two lock-step ranges (timing only; the central value is the iteration above)
      const OutputRange r =
          across_lockstep_range(params, [&](const Params& corner) { return iteration_seconds(net, q, corner); },
                                iteration);
      std::printf("  across the lock-step range: iteration %.1f-%.1f ms, %.1f-%.1f images/s (central %.1f)\n",
                  1e3 * r.low, 1e3 * r.high, double(batch) / r.high, double(batch) / r.low, double(batch) / iteration);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    // bad input: a net or batch the model cannot lay out (naming the layer), a bad config
    std::fprintf(stderr, "bench_sw26010_nets: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_sw26010_nets: internal error: %s\n", e.what());
    return 1;
  }
}
