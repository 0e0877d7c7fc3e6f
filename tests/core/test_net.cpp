#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/common/pending.hpp"
#include "core/layers/split.hpp"
#include "core/net/net.hpp"
#include "support/gradient_check.hpp"
#include "support/layer_fixture.hpp"

using namespace taihu;
using namespace taihu::testing;

TEST_SUITE("net") {
  TEST_CASE("Split shares data forward and sums gradients backward") {
    auto split = make_layer("Split");
    Blob x(Shape{2, 3, 4}), a, b, c;
    fill_uniform(x, 5);
    const BlobVec bottom{&x}, top{&a, &b, &c};
    split->reshape(bottom, top);
    split->forward(bottom, top);
    CHECK(a.data().shares_storage_with(x.data()));
    CHECK(c.data()[7] == x.data()[7]);
    check_gradients(*split, bottom, top);
  }

  TEST_CASE("net gradients: backward through splits and in-place layers matches finite differences") {
    // loss = sum(w * softmax-loss(ip(x)) ...) is checked parameter by parameter: perturb each weight
    // of a small net, recompute the loss, compare with the accumulated diff.
    auto doc = std::make_shared<config::Document>(config::Document::parse(R"(
[net]
name = branchy
[input data]
shape = 5
[input label]
shape =
[layer ip1]
type = InnerProduct
bottom = data
top = h
num_output = 4
weight_filler = uniform -0.5 0.5
bias_filler = uniform -0.1 0.1
[layer act]
type = TanH
bottom = h
top = h
[layer ip2]
type = InnerProduct
bottom = h
top = s1
num_output = 3
weight_filler = uniform -0.5 0.5
[layer ip3]
type = InnerProduct
bottom = h
top = s2
num_output = 3
weight_filler = uniform -0.5 0.5
[layer join]
type = Eltwise
bottom = s1 s2
top = s
[layer loss]
type = SoftmaxWithLoss
bottom = s label
top = loss
)",
                                                                           "branchy.ini"));
    Net net(doc, 4, 11);
    Rng rng(3);
    for (int64_t i = 0; i < net.blob("data").count(); ++i) net.blob("data").data()[i] = rng.uniform(-1, 1);
    for (int64_t i = 0; i < 4; ++i) net.blob("label").data()[i] = static_cast<float>(i % 3);
    net.zero_param_diffs();
    net.forward_backward();
    for (Param* p : net.learnable_params()) {
      std::vector<float> analytic(p->blob->diff().ptr(), p->blob->diff().ptr() + p->blob->count());
      for (int64_t i = 0; i < p->blob->count(); ++i) {
        float& w = p->blob->data()[i];
        const float original = w;
        const float h = 1e-2f;
        w = original + h;
        const double plus = net.forward();
        w = original - h;
        const double minus = net.forward();
        w = original;
        const double numeric = (plus - minus) / (2 * h);
        CHECK_MESSAGE(std::abs(numeric - analytic[i]) < 2e-3 + 1e-2 * std::abs(numeric),
                      p->name << "[" << i << "]: analytic " << analytic[i] << " numeric " << numeric);
      }
    }
  }

  TEST_CASE("net: an installed LayerExecutor runs every active layer's forward and backward instead") {
    auto doc = std::make_shared<config::Document>(config::Document::parse(R"(
[net]
name = small
[input data]
shape = 3
[input label]
shape =
[layer ip]
type = InnerProduct
bottom = data
top = ip
num_output = 2
[layer acc]
type = Accuracy
bottom = ip label
top = acc
phase = test
[layer loss]
type = SoftmaxWithLoss
bottom = ip label
top = loss
)",
                                                                          "small.ini"));
    // Runs the layers' own code, recording what it was asked to run; the
    // backward passes on a thread of their own, as a device's actors would:
    // the net's task suspends until they are done.
    struct Recorder final : LayerExecutor {
      Net* net = nullptr;
      std::vector<std::string> calls;
      std::vector<std::thread> devices;
      ~Recorder() override {
        for (auto& d : devices) d.join();
      }
      async::Task<> forward(std::size_t i) override {
        calls.push_back("f:" + net->layer(i).name());
        net->layer(i).forward(net->layer_bottoms(i), net->layer_tops(i));
        co_return;
      }
      async::Task<> backward(std::size_t i) override {
        calls.push_back("b:" + net->layer(i).name());
        co_await async::Pending<bool>([this, i](async::Completion<bool> done) {
          devices.emplace_back([this, i, done] {
            net->layer(i).backward(net->layer_tops(i), net->layer_propagate_down(i), net->layer_bottoms(i));
            done(true);
          });
        });
      }
    };
    Net plain(doc, 2, 5), routed(doc, 2, 5);
    Recorder recorder;
    recorder.net = &routed;
    routed.set_executor(&recorder);
    CHECK(routed.executor() == &recorder);
    for (Net* n : {&plain, &routed}) {
      const float values[] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.5f};
      std::copy(values, values + 6, n->blob("data").data().ptr());
      n->blob("label").data()[0] = 1, n->blob("label").data()[1] = 0;
      n->zero_param_diffs();
    }
    const float expected = plain.forward_backward();
    CHECK(routed.forward_backward() == expected);
    // (the automatic splits of ip and label run through it too; Accuracy is test-only)
    CHECK(recorder.calls == std::vector<std::string>{"f:label_split", "f:ip", "f:ip_split", "f:loss", "b:loss",
                                                     "b:ip_split", "b:ip"});
    const auto pp = plain.params(), pr = routed.params();
    for (size_t k = 0; k < pp.size(); ++k)
      for (int64_t e = 0; e < pp[k]->blob->count(); ++e) CHECK(pr[k]->blob->diff()[e] == pp[k]->blob->diff()[e]);
    routed.set_executor(nullptr);
    recorder.calls.clear();
    routed.forward();
    CHECK(recorder.calls.empty());
  }
}
