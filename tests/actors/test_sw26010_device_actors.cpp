// A net on the simulated SW26010 (actors/device): the 4 core-group actors
// compute what the CPU layers compute — losses, every parameter gradient,
// the BatchNorm running statistics (which need the 4 groups' sums) and the
// parameters after a few SGD steps — and account simulated time per layer.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "actors/device/sw26010_executor.hpp"
#include "core/common/random.hpp"
#include "core/net/net.hpp"
#include "support/training.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/layer_timing.hpp"
#include "devices/sw26010/lockstep_range.hpp"
#include "devices/sw26010/net_plan.hpp"
#include "support/actor_fixture.hpp"
#include "support/error_message.hpp"
#include "support/temp_dir.hpp"

using namespace taihu;

namespace {

// LeNet-BN's layer kinds at small sizes, plus a residual branch (Split, a
// pointwise convolution, Eltwise), a grouped convolution and average pooling.
const char* net_text = R"(
[net]
name = small-bn
# the tests read intermediate values and pool1's gradient after a pass: every blob keeps its own
share_values = false
share_gradients = false
[input data]
shape = 2 14 14
[input label]
shape =
[layer conv1]
type = Convolution
bottom = data
top = conv1
num_output = 8
kernel_size = 5
pad = 2
bias_term = false
weight_filler = msra
[layer bn1]
type = BatchNorm
bottom = conv1
top = bn1
[layer scale1]
type = Scale
bottom = bn1
top = scale1
bias_term = true
[layer relu1]
type = ReLU
bottom = scale1
top = scale1
[layer pool1]
type = Pooling
bottom = scale1
top = pool1
kernel_size = 2
stride = 2
[layer branch]
type = Convolution
bottom = pool1
top = branch
num_output = 8
kernel_size = 1
weight_filler = msra
[layer sum]
type = Eltwise
bottom = pool1 branch
top = sum
coeff = 1 0.5
[layer conv2]
type = Convolution
bottom = sum
top = conv2
num_output = 12
kernel_size = 3
pad = 1
group = 2
weight_filler = msra
[layer bn2]
type = BatchNorm
bottom = conv2
top = bn2
[layer relu2]
type = ReLU
bottom = bn2
top = bn2
[layer pool2]
type = Pooling
bottom = bn2
top = pool2
kernel_size = 3
stride = 2
pool = ave
[layer conv3]
type = Convolution
bottom = pool2
top = conv3
num_output = 10
kernel_size = 3
weight_filler = msra
[layer ip1]
type = InnerProduct
bottom = conv3
top = ip1
num_output = 16
weight_filler = xavier
[layer relu3]
type = ReLU
bottom = ip1
top = ip1
[layer ip2]
type = InnerProduct
bottom = ip1
top = ip2
num_output = 5
weight_filler = gaussian 0.1
[layer loss]
type = SoftmaxWithLoss
bottom = ip2 label
top = loss
)";

std::shared_ptr<const config::Document> description() {
  return std::make_shared<config::Document>(config::Document::parse(net_text, "small-bn.ini"));
}

void fill_inputs(Net& net, uint64_t seed) {
  Rng rng(seed);
  Tensor& data = net.blob("data").data();
  for (int64_t k = 0; k < data.count(); ++k) data[k] = rng.uniform(-1.0f, 1.0f);
  Tensor& label = net.blob("label").data();
  for (int64_t k = 0; k < label.count(); ++k) label[k] = float(k % 5);
}

// Largest |a - b| over the largest |b| (and at least a small floor).
double relative_difference(const Tensor& a, const Tensor& b) {
  double diff = 0.0, scale = 1e-3;
  for (int64_t k = 0; k < a.count(); ++k) {
    diff = std::max(diff, double(std::fabs(a[k] - b[k])));
    scale = std::max(scale, double(std::fabs(b[k])));
  }
  return diff / scale;
}

// `iterations` steps of plain SGD on the CPU and on the device, compared.
void compare_training(int64_t batch, int iterations, std::optional<sw26010::ConvMethod> method) {
  testing::ActorFixture fx;
  auto doc = description();
  Net cpu(doc, batch, 7), dev(doc, batch, 7);
  device::Sw26010Executor executor(fx.system, dev);
  executor.plan().force_conv_method(method);
  dev.set_executor(&executor);
  for (int it = 0; it < iterations; ++it) {
    CAPTURE(it);
    fill_inputs(cpu, 100 + uint64_t(it));
    fill_inputs(dev, 100 + uint64_t(it));
    cpu.zero_param_diffs();
    dev.zero_param_diffs();
    executor.begin_iteration(batch);
    const float loss_dev = dev.forward_backward();
    executor.end_iteration();
    const float loss_cpu = cpu.forward_backward();
    CHECK(loss_dev == doctest::Approx(loss_cpu).epsilon(1e-4));
    const auto pc = cpu.params(), pd = dev.params();
    REQUIRE(pc.size() == pd.size());
    for (size_t k = 0; k < pc.size(); ++k) {
      CAPTURE(pc[k]->name);
      CHECK(relative_difference(pd[k]->blob->data(), pc[k]->blob->data()) < 1e-4);  // incl. running statistics
      if (pc[k]->learnable) CHECK(relative_difference(pd[k]->blob->diff(), pc[k]->blob->diff()) < 2e-3);
    }
    for (size_t k = 0; k < pc.size(); ++k) {
      if (!pc[k]->learnable) continue;
      for (Param* p : {pc[k], pd[k]}) {
        Tensor& w = p->blob->data();
        const Tensor& g = p->blob->diff();
        for (int64_t e = 0; e < w.count(); ++e) w[e] -= 0.05f * g[e];
      }
    }
  }
  if (method) {
    for (size_t i = 0; i < dev.num_layers(); ++i)
      if (dev.layer(i).name() == "conv1" || dev.layer(i).name() == "branch") {
        CHECK(executor.plan().method(i) == sw26010::to_string(*method));  // every pass
      } else if (dev.layer(i).name() == "conv2") {
        // grouped: the implicit backward kernels work on one group's whole tensors only
        CHECK(executor.plan().method(i) == (*method == sw26010::ConvMethod::implicit
                                                ? "implicit (wgrad explicit, dgrad explicit)"
                                                : "explicit"));
      }
  }
  // the data gradient reached the input layer's successors
  CHECK(relative_difference(dev.blob("pool1").diff(), cpu.blob("pool1").diff()) < 2e-3);
}

}  // namespace

TEST_SUITE("sw26010_device") {
  TEST_CASE("sw26010 device: 4 core-group actors train like the CPU (uneven shares, faster conv method)") {
    compare_training(6, 3, std::nullopt);  // shares 2, 2, 1, 1
  }

  TEST_CASE("sw26010 device: implicit convolutions (grouped too) match the CPU") {
    compare_training(8, 2, sw26010::ConvMethod::implicit);
  }

  TEST_CASE("sw26010 device: BatchNorm statistics are the whole batch's, not one group's") {
    testing::ActorFixture fx;
    auto doc = description();
    Net cpu(doc, 8, 3), dev(doc, 8, 3);
    device::Sw26010Executor executor(fx.system, dev);
    dev.set_executor(&executor);
    // each group's share has its own offset: per-group statistics would differ
    fill_inputs(cpu, 5);
    Tensor& data = cpu.blob("data").data();
    for (int64_t n = 0; n < 8; ++n)
      for (int64_t k = 0; k < data.count() / 8; ++k) data[n * (data.count() / 8) + k] += float(n / 2);
    dev.blob("data").data().copy_from(data);
    dev.blob("label").data().copy_from(cpu.blob("label").data());
    cpu.forward();
    dev.forward();
    const auto pc = cpu.params(), pd = dev.params();
    for (size_t k = 0; k < pc.size(); ++k) {
      if (pc[k]->name != "bn1/mean" && pc[k]->name != "bn1/variance") continue;
      CAPTURE(pc[k]->name);
      CHECK(relative_difference(pd[k]->blob->data(), pc[k]->blob->data()) < 1e-5);
    }
    // The CPU net computes bn1 -> scale1 -> relu1 as one fused run, which
    // writes scale1 only (core/net/fusion.hpp): compare the run's output.
    CHECK(relative_difference(dev.blob("scale1").data(), cpu.blob("scale1").data()) < 1e-4);
  }

  TEST_CASE("sw26010 device: the report has simulated time per layer and images/s") {
    testing::ActorFixture fx;
    auto doc = description();
    Net dev(doc, 8, 1);
    device::Sw26010Executor executor(fx.system, dev);
    dev.set_executor(&executor);
    fill_inputs(dev, 1);
    for (int it = 0; it < 2; ++it) {
      dev.zero_param_diffs();
      executor.begin_iteration(8);
      dev.forward_backward();
      executor.end_iteration();
    }
    const DeviceReport r = executor.report();
    CHECK(r.device == "sw26010");
    CHECK(r.iterations == 2);
    CHECK(r.images == 16);
    CHECK(r.simulated_seconds > 0);
    CHECK(r.simulated_images_per_second() == doctest::Approx(16.0 / r.simulated_seconds));
    // across the lock-step parameters' ranges: around the iteration, the same as timing it alone at each corner
    CHECK(r.simulated_iteration_low <= r.simulated_iteration_seconds());
    CHECK(r.simulated_iteration_high >= r.simulated_iteration_seconds());
    double corner_high = 0;
    for (const auto& corner : sw26010::lockstep_corners(sw26010::Params::defaults()))
      corner_high = std::max(corner_high, sw26010::iteration_seconds(dev, 2, corner));
    CHECK(r.simulated_iteration_high == doctest::Approx(std::max(corner_high, r.simulated_iteration_seconds())));
    double layers = 0.0;
    for (const auto& t : r.layers) {
      CAPTURE(t.name);
      layers += t.forward_seconds + t.backward_seconds();
      if (t.type == "Convolution") {
        CHECK((t.method == "explicit" || t.method == "implicit"));
        CHECK(t.forward_seconds > 0);
        CHECK(t.weight_gradient_seconds > 0);
      }
      if (t.name == "conv1") CHECK(t.data_gradient_seconds == 0);  // the input needs no gradient
      if (t.name == "conv2") CHECK(t.data_gradient_seconds > 0);
      if (t.type == "SoftmaxWithLoss") CHECK(t.method == "MPE");
      CHECK(t.simulated);
    }
    // each iteration ends with swCaffe's SGD step over the learnable parameters, on top of the layers
    sw26010::CoreGroup scratch(0, sw26010::Params::defaults());
    scratch.set_numerics(false);
    const double step =
        sw26010::Params::defaults().seconds(double(sw26010::sgd_update(scratch, dev.num_learnable_parameters())));
    CHECK(step > 0);
    CHECK(r.update_seconds == doctest::Approx(2 * step));
    CHECK(layers * 2 + r.update_seconds == doctest::Approx(r.simulated_seconds));
  }

  TEST_CASE("sw26010 device: a layer the kernels cannot lay out in LDM is an error naming it, the buffer and sizes") {
    // 5000 channels: channel_affine's scale and shift per channel (2 x 20000 bytes) and its 4 chunk buffers
    // (4 x 8192) do not fit a CPE's 64 KB.
    testing::ActorFixture fx;
    auto doc = std::make_shared<config::Document>(config::Document::parse(
        "[net]\nname = wide\n[input data]\nshape = 5000 1 1\n"
        "[layer wide_bn]\ntype = BatchNorm\nbottom = data\ntop = wide_bn\n",
        "wide.ini"));
    Net dev(doc, 8, 1);
    device::Sw26010Executor executor(fx.system, dev);
    dev.set_executor(&executor);
    const std::string msg = testing::error_message<Error>([&] { dev.forward(); });
    CHECK(msg.find("layer 'wide_bn' (BatchNorm), 2 samples on core group ") != std::string::npos);
    CHECK(msg.find("kernel 'channel_affine'") != std::string::npos);
    CHECK(msg.find("'scale (a float per channel)' (20000 bytes)") != std::string::npos);
    CHECK(msg.find("65536-byte local store") != std::string::npos);
  }

  TEST_CASE("sw26010 device: evaluation runs the layers' CPU code, training the kernels") {
    // evaluation (test phase) runs the CPU code; training runs the kernels
    testing::ActorFixture fx;
    auto doc = description();
    Net dev(doc, 4, 1);
    device::Sw26010Executor executor(fx.system, dev);
    dev.set_executor(&executor);
    fill_inputs(dev, 1);
    dev.set_phase(Phase::test);
    CHECK(std::isfinite(dev.forward()));
    dev.set_phase(Phase::train);
    CHECK(std::isfinite(dev.forward()));
  }

  TEST_CASE("sw26010 device: taihu's training loop with device = sw26010 follows device = cpu; iterations stops it") {
    testing::TempDir dir;
    dir.write("net.ini", net_text);
    const std::string app = "net = net.ini\nepochs = 2\nbatch_size = 6\ntest_batch_size = 12\nseed = 2\ndisplay = 0\n"
                            "iterations = 3\n"
                            "[data]\nsource = synthetic\nshape = 2 14 14\nclasses = 5\ntrain_size = 24\ntest_size = 12\n"
                            "prefetch = 0\n[solver]\ntype = sgd\nbase_lr = 0.05\nmomentum = 0.9\n"
                            "[output]\ndir = " + dir.path().string() + "/out\nmetrics = \ncheckpoint = \n";
    const auto path = dir.write("app.ini", app);
    auto run = [&](const std::string& device, std::vector<float>& params) {
      config::Document doc = config::Document::parse_file(path);
      doc.root().set("device", device, config::Location{"test", 0});
      const auto result = testing::run_training(std::move(doc));
      params = result.final_parameters.at(0);
      return testing::net_report(result);
    };
    std::vector<float> cpu_params, dev_params;
    const TrainReport cpu = run("cpu", cpu_params);
    const TrainReport dev = run("sw26010", dev_params);
    CHECK(cpu.iterations == 3);  // stopped inside the first epoch
    CHECK(dev.iterations == 3);
    CHECK(dev.train_loss == doctest::Approx(cpu.train_loss).epsilon(1e-4));
    CHECK(dev.test_loss == doctest::Approx(cpu.test_loss).epsilon(1e-4));
    REQUIRE(cpu_params.size() == dev_params.size());
    for (size_t e = 0; e < cpu_params.size(); ++e)
      REQUIRE(dev_params[e] == doctest::Approx(cpu_params[e]).epsilon(1e-3).scale(1.0));
    CHECK(cpu.device == "cpu");
    CHECK(dev.device == "sw26010");
    CHECK(dev.device_report.iterations == 3);
    CHECK(dev.device_report.simulated_images_per_second() > 0);
    const std::string json = dev.to_json();
    CHECK(json.find("\"simulated_images_per_second\": ") != std::string::npos);
    CHECK(json.find("\"simulated_iteration_seconds_range\": [") != std::string::npos);
    CHECK(json.find("\"name\": \"conv1\", \"type\": \"Convolution\", \"method\": \"") != std::string::npos);
    CHECK(cpu.to_json().find("simulated") == std::string::npos);
  }

  TEST_CASE("sw26010 device: replicas on simulated chips train data-parallel; the report has each chip's time and "
            "the allreduce's share; RedSync compresses their gradients") {
    testing::TempDir dir;
    dir.write("net.ini", net_text);
    // The chips' interconnect: a TaihuLight supernode (config/topologies/taihulight.ini).
    const std::string app = "net = net.ini\nepochs = 1\nbatch_size = 6\ntest_batch_size = 12\nseed = 2\ndisplay = 0\n"
                            "iterations = 2\nworkers = 2\n"
                            "[data]\nsource = synthetic\nshape = 2 14 14\nclasses = 5\ntrain_size = 24\ntest_size = 12\n"
                            "prefetch = 0\n[solver]\ntype = sgd\nbase_lr = 0.05\nmomentum = 0.9\n"
                            "[sync]\nstep_timeout = 120\n"
                            "[network]\nmodel = tree\ngroup_sizes = 256\nnode_bandwidth = 5.9e9\ntaper = 4\n"
                            "latency = 1e-6 2e-6\nrendezvous_bytes = 2048\nrendezvous_latency = 2.4e-3\n"
                            "reduce_rate = 4e9\ncontention = fifo\nplacement = block\n"
                            "[output]\ndir = " + dir.path().string() + "/out\nmetrics = \ncheckpoint = \n";
    auto run = [&](const std::string& device, const std::string& extra = "") {
      config::Document doc = config::Document::parse_file(dir.write("app.ini", app + extra));
      doc.root().set("device", device, config::Location{"test", 0});
      if (device == "cpu") doc.section("network").mark_all_used();
      return testing::run_training(std::move(doc));
    };
    const auto cpu = run("cpu");
    const auto chips = run("sw26010");
    // Each chip trains like a CPU replica (its BatchNorm statistics are its own
    // batch's, on either), up to the device kernels' float order.
    REQUIRE(chips.final_parameters.size() == 2);
    for (int r = 0; r < 2; ++r)
      for (size_t e = 0; e < cpu.final_parameters[r].size(); ++e)
        REQUIRE(chips.final_parameters[r][e] == doctest::Approx(cpu.final_parameters[r][e]).epsilon(1e-3).scale(1.0));
    const TrainReport report = testing::net_report(chips);
    CHECK(report.workers == 2);
    REQUIRE(report.chip_iteration_seconds.size() == 2);
    for (double t : report.chip_iteration_seconds) CHECK(t > 0);
    CHECK(report.simulated_allreduce_seconds > 0);
    CHECK(report.simulated_allreduce_share() > 0);
    CHECK(report.simulated_allreduce_share() < 1);
    const std::string json = report.to_json();
    for (const char* key : {"\"chip_iteration_seconds\"", "\"simulated_allreduce_seconds\"",
                            "\"simulated_allreduce_share\"", "\"simulated_system_images_per_second\""})
      CHECK_MESSAGE(json.find(key) != std::string::npos, key);
    // RedSync on the chips' gradients: fewer bytes between them, still training.
    const TrainReport compressed = testing::net_report(
        run("sw26010", "[compress]\nmethod = topk\ndensity = 0.1\nmin_elements = 0\n"));
    CHECK(compressed.bytes_sent_per_iteration < compressed.dense_bytes_per_iteration);
    CHECK(std::isfinite(compressed.train_loss));
    CHECK(compressed.chip_iteration_seconds.size() == 2);
  }
}
