// Fused runs of memory-bound layers (core/net/fusion.hpp): a net computes
// BatchNorm -> Scale -> ReLU and Eltwise -> ReLU in one pass per direction,
// and everything outside the runs equals the layers one by one, bit for bit.

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/net/layer_executor.hpp"
#include "core/net/net.hpp"

using namespace taihu;

namespace {

// A residual block with every kind of run and the cases that must not fuse:
// BN + Scale + ReLU in place; BN + Scale without a bias, then a leaky ReLU
// with its own top; BN + ReLU; BN + Scale before a sum; Eltwise + ReLU in
// place; a BN whose output two layers read (a Split: not fused); BN on the
// input (no bottom gradient).
std::string block_net(const std::string& extra_net_keys) {
  return R"(
[net]
name = fusion
# the checks read intermediate blobs' values and gradients after backward: every blob keeps its own
share_values = false
share_gradients = false
)" + extra_net_keys +
         R"(
[input data]
shape = 3 6 5
[input label]
shape =
[layer bn_in]
type = BatchNorm
bottom = data
top = bn_in
[layer scale_in]
type = Scale
bottom = bn_in
top = scale_in
bias_term = true
[layer conv1]
type = Convolution
bottom = scale_in
top = conv1
num_output = 4
kernel_size = 3
pad = 1
weight_filler = gaussian 0.3
[layer bn1]
type = BatchNorm
bottom = conv1
top = bn1
[layer scale1]
type = Scale
bottom = bn1
top = scale1
bias_term = true
bias_filler = uniform -0.2 0.2
weight_filler = uniform 0.5 1.5
[layer relu1]
type = ReLU
bottom = scale1
top = scale1
[layer conv2]
type = Convolution
bottom = scale1
top = conv2
num_output = 4
kernel_size = 3
pad = 1
weight_filler = gaussian 0.3
[layer bn2]
type = BatchNorm
bottom = conv2
top = bn2
[layer scale2]
type = Scale
bottom = bn2
top = scale2
weight_filler = uniform 0.5 1.5
[layer leaky2]
type = ReLU
bottom = scale2
top = leaky2
negative_slope = 0.1
[layer conv3]
type = Convolution
bottom = leaky2
top = conv3
num_output = 4
kernel_size = 1
weight_filler = gaussian 0.3
[layer bn3]
type = BatchNorm
bottom = conv3
top = bn3
[layer relu3]
type = ReLU
bottom = bn3
top = bn3
[layer conv4]
type = Convolution
bottom = bn3
top = conv4
num_output = 4
kernel_size = 1
weight_filler = gaussian 0.3
[layer bn4]
type = BatchNorm
bottom = conv4
top = bn4
[layer scale4]
type = Scale
bottom = bn4
top = scale4
bias_term = true
[layer sum]
type = Eltwise
bottom = scale4 scale1
top = sum
[layer relu_sum]
type = ReLU
bottom = sum
top = sum
[layer conv5]
type = Convolution
bottom = sum
top = conv5
num_output = 4
kernel_size = 1
weight_filler = gaussian 0.3
[layer bn5]
type = BatchNorm
bottom = conv5
top = bn5
[layer tap]
type = Pooling
bottom = bn5
top = tap
pool = ave
global_pooling = true
[layer scale5]
type = Scale
bottom = bn5
top = scale5
bias_term = true
[layer relu5]
type = ReLU
bottom = scale5
top = scale5
[layer ip]
type = InnerProduct
bottom = scale5
top = ip
num_output = 3
weight_filler = gaussian 0.3
[layer ip_tap]
type = InnerProduct
bottom = tap
top = ip_tap
num_output = 3
[layer both]
type = Eltwise
bottom = ip ip_tap
top = score
[layer loss]
type = SoftmaxWithLoss
bottom = score label
top = loss
)";
}

std::unique_ptr<Net> make_net(const std::string& extra_net_keys, int64_t batch = 4) {
  auto doc = std::make_shared<config::Document>(config::Document::parse(block_net(extra_net_keys), "fusion.ini"));
  auto net = std::make_unique<Net>(doc, batch, 7);
  Rng rng(5);
  Blob& data = net->blob("data");
  for (int64_t i = 0; i < data.count(); ++i) data.data()[i] = rng.uniform(-2.0f, 3.0f);
  for (int64_t i = 0; i < net->blob("label").count(); ++i) net->blob("label").data()[i] = static_cast<float>(i % 3);
  return net;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.count() == b.count() && std::memcmp(a.ptr(), b.ptr(), sizeof(float) * static_cast<size_t>(a.count())) == 0;
}

// Everything a fused run must leave as the layers would: the loss, every
// parameter and state and its diff, the blobs read after the runs.
void check_same(Net& fused, Net& separate) {
  const auto a = fused.params(), b = separate.params();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK_MESSAGE(same_bits(a[i]->blob->data(), b[i]->blob->data()), a[i]->name);
    CHECK_MESSAGE(same_bits(a[i]->blob->diff(), b[i]->blob->diff()), a[i]->name << " diff");
  }
  for (const char* blob : {"scale1", "leaky2", "bn3", "sum", "scale5", "score", "loss"})
    CHECK_MESSAGE(same_bits(fused.blob(blob).data(), separate.blob(blob).data()), blob);
  for (const char* blob : {"conv1", "conv2", "conv3", "conv4", "conv5", "scale_in"})
    CHECK_MESSAGE(same_bits(fused.blob(blob).diff(), separate.blob(blob).diff()), blob << " diff");
}

}  // namespace

TEST_SUITE("fusion") {
  TEST_CASE("the runs found: every fusable chain, none where a blob has two readers or a slope needs the sum") {
    auto net = make_net("");
    CHECK(describe_fused_runs(net->fused_runs()) ==
          "1 BatchNorm+ReLU, 2 BatchNorm+Scale, 2 BatchNorm+Scale+ReLU, 1 Eltwise+ReLU");
    std::vector<std::string> firsts;
    for (const auto& run : net->fused_runs()) firsts.push_back(net->layer(run->first()).name());
    // bn5's output is read by the pooling too (a Split): it stays alone.
    CHECK(firsts == std::vector<std::string>{"bn_in", "bn1", "bn2", "bn3", "bn4", "sum"});
    CHECK(make_net("fuse = false")->fused_runs().empty());
  }

  TEST_CASE("a fused run's inside holds no memory, unless an executor runs the layers one by one") {
    // A stand-in for a device executor: it only has to be set.
    struct OneByOne final : LayerExecutor {
      async::Task<> forward(std::size_t) override { co_return; }
      async::Task<> backward(std::size_t) override { co_return; }
    } executor;
    auto net = make_net("");
    const Blob& inside = net->blob("bn1");  // BatchNorm's top, read by the run's Scale alone
    CHECK(inside.shape_only());
    CHECK(inside.data().ptr() == nullptr);
    CHECK(inside.diff().ptr() == nullptr);
    CHECK(inside.shape() == net->blob("scale1").shape());
    CHECK(net->blob("scale1").data().ptr() != nullptr);  // the run's output, and its input, keep theirs
    CHECK(net->blob("conv1").diff().ptr() != nullptr);
    CHECK_FALSE(net->blob("bn3").shape_only());  // the output of a BatchNorm+ReLU in place
    net->set_batch(3);  // every layer reshapes: the inside stays without storage, with its new shape
    CHECK(inside.data().ptr() == nullptr);
    CHECK(inside.shape()[0] == 3);
    net->set_executor(&executor);
    CHECK(inside.data().ptr() != nullptr);
    CHECK(inside.diff().ptr() != nullptr);
    CHECK(inside.data().count() == net->blob("scale1").count());
    net->set_executor(nullptr);
    CHECK(inside.data().ptr() == nullptr);
    CHECK_FALSE(make_net("fuse = false")->blob("bn1").shape_only());

    // A BatchNorm -> Scale on flat features is no run (the fused pass wants feature maps): its
    // middle blob, held back while the layers set up, gets storage and is computed.
    auto flat = std::make_unique<Net>(std::make_shared<config::Document>(config::Document::parse(R"(
[net]
name = flat
[input data]
shape = 5
[layer ip]
type = InnerProduct
bottom = data
top = ip
num_output = 4
weight_filler = gaussian 0.3
[layer bn]
type = BatchNorm
bottom = ip
top = bn
[layer scale]
type = Scale
bottom = bn
top = scale
)",
                                                                                                  "flat.ini")),
                                      3, 7);
    CHECK(flat->fused_runs().empty());
    REQUIRE_FALSE(flat->blob("bn").shape_only());
    Rng rng(3);
    for (int64_t i = 0; i < flat->blob("data").count(); ++i) flat->blob("data").data()[i] = rng.uniform(-1.0f, 1.0f);
    flat->forward();
    double magnitude = 0;
    for (int64_t i = 0; i < flat->blob("bn").count(); ++i) magnitude += std::abs(flat->blob("bn").data()[i]);
    CHECK(magnitude > 0.1);
  }

  TEST_CASE("fused and separate layers give the same bits: training steps, batch changes, evaluation") {
    auto fused = make_net("");
    auto separate = make_net("fuse = false");
    REQUIRE_FALSE(fused->fused_runs().empty());
    for (int step = 0; step < 3; ++step) {
      if (step == 2) {  // another batch size: every run reshapes
        fused->set_batch(3);
        separate->set_batch(3);
      }
      for (Net* net : {fused.get(), separate.get()}) {
        Rng rng(100 + step);
        Blob& data = net->blob("data");
        for (int64_t i = 0; i < data.count(); ++i) data.data()[i] = rng.uniform(-2.0f, 3.0f);
        net->zero_param_diffs();
      }
      const float a = fused->forward_backward();
      const float b = separate->forward_backward();
      CHECK(std::memcmp(&a, &b, sizeof a) == 0);
      check_same(*fused, *separate);
      // A step of plain SGD so the next step sees new weights and statistics.
      for (Net* net : {fused.get(), separate.get()})
        for (Param* p : net->learnable_params())
          for (int64_t i = 0; i < p->blob->count(); ++i) p->blob->data()[i] -= 0.1f * p->blob->diff()[i];
    }
    // Evaluation: running statistics, no backward.
    fused->set_phase(Phase::test);
    separate->set_phase(Phase::test);
    const float a = fused->forward(), b = separate->forward();
    CHECK(std::memcmp(&a, &b, sizeof a) == 0);
    CHECK(same_bits(fused->blob("score").data(), separate->blob("score").data()));
  }

  TEST_CASE("fused: frozen BatchNorm (use_global_stats) in training gives the same bits") {
    // The same net with every BatchNorm frozen: the backward's affine branch.
    std::string text = block_net("");
    for (size_t at = 0; (at = text.find("type = BatchNorm\n", at)) != std::string::npos; at += 1)
      text.insert(at + std::string("type = BatchNorm\n").size(), "use_global_stats = true\n");
    auto build = [&](bool fuse) {
      std::string t = text;
      if (!fuse) t.replace(t.find("name = fusion\n"), 14, "name = fusion\nfuse = false\n");
      auto net = std::make_unique<Net>(std::make_shared<config::Document>(config::Document::parse(t, "f.ini")), 4, 7);
      Rng rng(9);
      for (int64_t i = 0; i < net->blob("data").count(); ++i) net->blob("data").data()[i] = rng.uniform(-2.0f, 3.0f);
      for (int64_t i = 0; i < 4; ++i) net->blob("label").data()[i] = static_cast<float>(i % 3);
      return net;
    };
    auto fused = build(true), separate = build(false);
    REQUIRE(fused->fused_runs().size() == 6);
    fused->zero_param_diffs();
    separate->zero_param_diffs();
    fused->forward_backward();
    separate->forward_backward();
    check_same(*fused, *separate);
  }

  TEST_CASE("fused runs' gradients match finite differences of the loss") {
    // Through the fused backward only: weights before, inside and after the runs.
    auto net = make_net("", 3);
    REQUIRE_FALSE(net->fused_runs().empty());
    net->zero_param_diffs();
    net->forward_backward();
    int checked = 0, off = 0;
    for (Param* p : net->learnable_params()) {
      const std::string& name = p->name;
      if (name.rfind("conv1/", 0) != 0 && name.rfind("scale1/", 0) != 0 && name.rfind("scale2/", 0) != 0 &&
          name.rfind("conv4/", 0) != 0 && name.rfind("scale_in/", 0) != 0)
        continue;
      std::vector<float> analytic(p->blob->diff().ptr(), p->blob->diff().ptr() + p->blob->count());
      for (int64_t i = 0; i < p->blob->count(); i += 3) {
        float& w = p->blob->data()[i];
        const float original = w;
        const float h = 2e-3f;
        w = original + h;
        const double plus = net->forward();
        w = original - h;
        const double minus = net->forward();
        w = original;
        const double numeric = (plus - minus) / (2 * h);
        ++checked;
        // A ReLU kink crossed by the step spoils the difference; allow a few.
        if (std::abs(numeric - analytic[static_cast<size_t>(i)]) > 3e-3 + 2e-2 * std::abs(numeric)) {
          ++off;
          MESSAGE(name << "[" << i << "]: analytic " << analytic[static_cast<size_t>(i)] << " numeric " << numeric);
        }
      }
    }
    CHECK(checked > 40);
    CHECK(off <= checked / 20);
  }
}
