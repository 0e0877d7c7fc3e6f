// The shipped net descriptions (config/nets/*.ini): each parses, builds,
// has the published number of learnable parameters, and runs one
// forward + backward at batch 2 with a loss near ln(classes) at
// initialisation, finite gradients reaching every parameter, and sane
// test-phase accuracies. The ImageNet nets are in the "slow" suite.
//
// The expected counts are the ones scripts/gen_nets.py checks analytically.

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>

#include "core/common/random.hpp"
#include "core/config/config.hpp"
#include "core/net/net.hpp"

using namespace taihu;

namespace {

struct NetExpectation {
  const char* file;         // under config/nets/
  const char* name;         // [net] name
  int64_t params;           // learnable parameters
  int classes;
  // Bound on |initial loss - ln(classes)|. Batch 2 makes the loss noisy: with
  // initial scores of spread s, each sample's loss is about ln(classes) + s^2/2
  // give or take s, and dropout masks add to it. Over several input seeds the
  // nets stayed within: VGG 0.45, AlexNet-BN 0.3, ResNet-50 0.7 (fc1000 is
  // N(0, 0.01^2) on BN-scaled features), GoogLeNet 1.2 (Caffe's xavier
  // classifier on features of mean square ~1.5, and dropout).
  float loss_tolerance;
  bool unit_range_inputs;   // pixels in [0, 1) (MNIST-like) rather than N(0, 1)
};

std::unique_ptr<Net> build(const std::string& file, int64_t batch, uint64_t seed = 1) {
  auto doc = std::make_shared<const config::Document>(
      config::Document::parse_file(std::string(TAIHU_SOURCE_DIR "/config/nets/") + file));
  return std::make_unique<Net>(std::move(doc), batch, seed);
}

void fill_inputs(Net& net, int classes, bool unit_range, uint64_t seed) {
  Rng rng(seed);
  Tensor& data = net.blob("data").data();
  for (int64_t i = 0; i < data.count(); ++i) data[i] = unit_range ? rng.uniform() : rng.normal();
  Tensor& label = net.blob("label").data();
  for (int64_t i = 0; i < label.count(); ++i) label[i] = static_cast<float>(rng.below(classes));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool has_output(const Net& net, const std::string& name) {
  for (const auto& n : net.output_names())
    if (n == name) return true;
  return false;
}

// Builds the net at batch 2 and runs the checks described at the top.
void check_shipped_net(const NetExpectation& e) {
  INFO("net file: " << std::string(e.file));
  auto net = build(e.file, 2);
  CHECK(net->name() == e.name);
  CHECK(net->num_learnable_parameters() == e.params);
  CHECK(has_output(*net, "loss"));
  CHECK(has_output(*net, "accuracy"));
  CHECK(net->blob("data").shape().rank() == 4);

  fill_inputs(*net, e.classes, e.unit_range_inputs, 7);
  net->zero_param_diffs();
  const float loss = net->forward_backward();
  CHECK(std::isfinite(loss));
  CHECK(std::abs(loss - std::log(static_cast<float>(e.classes))) < e.loss_tolerance);

  // Every learnable parameter gets a finite gradient, and a non-zero one:
  // backward reaches the first layer and no branch is cut off.
  int64_t params_without_gradient = 0, non_finite = 0;
  for (const Param* p : net->learnable_params()) {
    const Tensor& diff = p->blob->diff();
    bool any = false;
    for (int64_t i = 0; i < diff.count(); ++i) {
      if (!std::isfinite(diff[i])) ++non_finite;
      any = any || diff[i] != 0.0f;
    }
    if (!any) {
      ++params_without_gradient;
      MESSAGE("no gradient reaches " << p->name);
    }
  }
  CHECK(non_finite == 0);
  CHECK(params_without_gradient == 0);

  // A second, warm iteration is the one timed.
  net->zero_param_diffs();
  const auto start = std::chrono::steady_clock::now();
  const float loss2 = net->forward_backward();
  const double elapsed = seconds_since(start);
  CHECK(std::isfinite(loss2));
  MESSAGE(std::string(e.file) << ": " << net->num_learnable_parameters() << " learnable parameters, initial loss " << loss
                 << " (ln " << e.classes << " = " << std::log(static_cast<float>(e.classes))
                 << "), forward+backward at batch 2: " << elapsed * 1e3 << " ms");

  // Test phase: the accuracy layers run and give fractions of the batch.
  net->set_phase(Phase::test);
  const float test_loss = net->forward();
  CHECK(std::isfinite(test_loss));
  const float top1 = net->blob("accuracy").data()[0];
  CHECK(top1 >= 0.0f);
  CHECK(top1 <= 1.0f);
  if (net->has_blob("accuracy_top5")) {
    const float top5 = net->blob("accuracy_top5").data()[0];
    CHECK(top5 >= top1);
    CHECK(top5 <= 1.0f);
  }
}

// Plain SGD on one fixed batch: a net that can learn drives the loss down.
void check_fits_one_batch(const char* file, int steps, float lr) {
  INFO("net file: " << std::string(file));
  auto net = build(file, 8, 3);
  fill_inputs(*net, 10, true, 11);
  float first = 0.0f, last = 0.0f;
  for (int step = 0; step < steps; ++step) {
    net->zero_param_diffs();
    const float loss = net->forward_backward();
    if (step == 0) first = loss;
    last = loss;
    for (Param* p : net->learnable_params()) {
      float* w = p->blob->data().ptr();
      const float* g = p->blob->diff().ptr();
      const float rate = lr * p->lr_mult;
      for (int64_t i = 0; i < p->blob->count(); ++i) w[i] -= rate * g[i];
    }
  }
  CHECK(std::isfinite(last));
  CHECK(last < 0.5f * first);
}

}  // namespace

TEST_SUITE("nets") {
  TEST_CASE("nets: lenet.ini builds, has 431,080 parameters, runs forward and backward") {
    check_shipped_net({"lenet.ini", "lenet", 431'080, 10, 0.5f, true});
  }

  TEST_CASE("nets: lenet-bn.ini builds, has 1,663,466 parameters, runs forward and backward") {
    check_shipped_net({"lenet-bn.ini", "lenet-bn", 1'663'466, 10, 0.5f, true});
  }

  TEST_CASE("nets: lenet.ini and lenet-bn.ini fit one batch with plain SGD") {
    check_fits_one_batch("lenet.ini", 30, 0.05f);
    check_fits_one_batch("lenet-bn.ini", 30, 0.05f);
  }

  TEST_CASE("nets: every shipped net file parses") {
    for (const char* file : {"lenet.ini", "lenet-bn.ini", "alexnet.ini", "alexnet-bn.ini", "vgg16.ini",
                             "vgg19.ini", "resnet50.ini", "googlenet.ini"}) {
      INFO(std::string(file));
      const auto doc = config::Document::parse_file(std::string(TAIHU_SOURCE_DIR "/config/nets/") + file);
      CHECK(doc.find("net") != nullptr);
      CHECK(doc.find("input", "data") != nullptr);
      CHECK(doc.find("input", "label") != nullptr);
      CHECK(doc.find("layer", "loss") != nullptr);
      CHECK(doc.find("layer", "accuracy") != nullptr);
    }
  }
}

TEST_SUITE("slow") {
  TEST_CASE("nets: alexnet.ini (bvlc_alexnet) has 60,965,224 parameters and runs") {
    check_shipped_net({"alexnet.ini", "alexnet", 60'965'224, 1000, 0.5f, false});
  }

  TEST_CASE("nets: alexnet-bn.ini has 60,966,600 parameters and runs") {
    check_shipped_net({"alexnet-bn.ini", "alexnet-bn", 60'966'600, 1000, 0.75f, false});
  }

  TEST_CASE("nets: vgg16.ini has 138,357,544 parameters and runs") {
    check_shipped_net({"vgg16.ini", "vgg16", 138'357'544, 1000, 0.75f, false});
  }

  TEST_CASE("nets: vgg19.ini has 143,667,240 parameters and runs") {
    check_shipped_net({"vgg19.ini", "vgg19", 143'667'240, 1000, 0.75f, false});
  }

  TEST_CASE("nets: resnet50.ini has 25,557,032 parameters and runs") {
    check_shipped_net({"resnet50.ini", "resnet50", 25'557'032, 1000, 1.0f, false});
  }

  TEST_CASE("nets: googlenet.ini has 6,998,552 parameters and runs") {
    check_shipped_net({"googlenet.ini", "googlenet", 6'998'552, 1000, 1.5f, false});
  }
}
