#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/layer_timing.hpp"
#include "devices/sw26010/layout_runs.hpp"
#include "devices/sw26010/net_plan.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {

std::string conv(const std::string& name, const std::string& bottom, const std::string& top) {
  return "[layer " + name + "]\ntype = Convolution\nbottom = " + bottom + "\ntop = " + top +
         "\nnum_output = 64\nkernel_size = 3\npad = 1\n";
}
std::string relu(const std::string& name, const std::string& bottom, const std::string& top) {
  return "[layer " + name + "]\ntype = ReLU\nbottom = " + bottom + "\ntop = " + top + "\n";
}

// c1 -> relu in place -> c2 -> relu (own top) -> c3 -> pool -> c4 -> c5 (the net's output)
std::shared_ptr<config::Document> runs_net() {
  const std::string text = "[net]\nname = runs\n[input data]\nshape = 64 8 8\n" + conv("c1", "data", "c1") +
                           relu("r1", "c1", "c1") + conv("c2", "c1", "c2") + relu("r2", "c2", "r2") +
                           conv("c3", "r2", "c3") +
                           "[layer p]\ntype = Pooling\nbottom = c3\ntop = p\nkernel_size = 2\nstride = 2\n" +
                           conv("c4", "p", "c4") + conv("c5", "c4", "c5");
  return std::make_shared<config::Document>(config::Document::parse(text, "runs.ini"));
}

enum Layer : std::size_t { c1, r1, c2, r2, c3, p, c4, c5 };

}  // namespace

TEST_SUITE("sw26010") {
  TEST_CASE("transform layer: a blob stays implicit between implicit convolutions, through ReLUs, nowhere else") {
    Net net(runs_net(), 2, 1);
    REQUIRE(net.num_layers() == 8);
    auto is_conv = [&](std::size_t i) { return std::string(net.layer(i).type()) == "Convolution"; };
    const auto l = implicit_runs(net, is_conv);
    CHECK_FALSE(l[c1].bottom_implicit);  // the input: written by no convolution
    CHECK(l[c1].top_implicit);
    CHECK((l[r1].bottom_implicit && l[r1].top_implicit));
    CHECK((l[c2].bottom_implicit && l[c2].top_implicit));  // a ReLU with its own top is looked through
    CHECK(l[c3].bottom_implicit);
    CHECK_FALSE(l[c3].top_implicit);  // pooling needs Caffe's layout
    CHECK_FALSE(l[c4].bottom_implicit);
    CHECK(l[c4].top_implicit);
    CHECK(l[c5].bottom_implicit);
    CHECK_FALSE(l[c5].top_implicit);  // the net's output

    // c3 not implicit throughout: the blob between c2 and c3 goes back to Caffe's layout
    const auto broken = implicit_runs(net, [&](std::size_t i) { return is_conv(i) && i != c3; });
    CHECK(broken[c1].top_implicit);
    CHECK_FALSE(broken[c2].top_implicit);
    CHECK_FALSE(broken[c3].bottom_implicit);
    CHECK(broken[c4].top_implicit);
  }

  TEST_CASE("transform layer: inside a run an implicit convolution is charged no conversion, exactly") {
    const auto doc = config::Document::parse("[layer c]\nnum_output = 64\nkernel_size = 3\npad = 1\n", "t.ini");
    const std::int64_t q = 32, c = 128, h = 8, w = 8, no = 64;
    LayerShape layer{"Convolution", doc.find("layer", "c"), {Shape{q, c, h, w}}, {Shape{q, no, h, w}}, true, "c", {}};
    // every pass implicit, whatever the model would pick: the cache is what time_layer consults
    std::map<std::string, ConvChoice> cache;
    (void)conv_layer_choice(Params::defaults(), layer, &cache);
    for (auto& [key, choice] : cache)
      choice.method = choice.weight_gradient = choice.data_gradient = ConvMethod::implicit;

    CoreGroup cg(0, Params::defaults());
    cg.set_numerics(false);
    Scratch scratch(false);
    const LayerTiming alone = time_layer(cg, layer, scratch, &cache);
    layer.layouts = {true, true};
    const LayerTiming inside = time_layer(cg, layer, scratch, &cache);
    CHECK(alone.method == "implicit");

    float* a = scratch.get(0, 1);  // timing only: every tensor at the one scratch address
    const std::int64_t x_in = to_hcwn(cg, a, a, q, c, h, w).cycles, y_out = to_nchw(cg, a, a, q, no, h, w).cycles;
    const std::int64_t dy_in = to_hcwn(cg, a, a, q, no, h, w).cycles, dx_out = to_nchw(cg, a, a, q, c, h, w).cycles;
    CHECK(alone.forward - inside.forward == x_in + y_out);
    // the weight gradient reads x and dy, the data gradient reads dy and writes dx
    CHECK(alone.backward - inside.backward == x_in + 2 * dy_in + dx_out);
  }

  TEST_CASE("transform layer: taihu-train's plan places runs by the methods its convolutions use") {
    Net net(runs_net(), 4, 1);
    net.set_phase(Phase::train);
    NetPlan plan(net);
    plan.force_conv_method(ConvMethod::implicit);
    CHECK(plan.layouts(c1).top_implicit);
    CHECK(plan.layouts(c3).bottom_implicit);
    CHECK_FALSE(plan.layouts(c3).top_implicit);
    // the same geometry (64 -> 64 channels, 8 x 8) converts less inside the run:
    // c2 neither side, c1 its input, c3 its output
    auto forward_cycles = [&](std::size_t i) {
      plan.before_phase(i, Pass::forward, 0);
      return plan.run(0, i, Pass::forward, 0).cycles;
    };
    const std::int64_t inside = forward_cycles(c2);
    CHECK(inside < forward_cycles(c1));
    CHECK(inside < forward_cycles(c3));
    plan.force_conv_method(ConvMethod::explicit_gemm);
    for (std::size_t i = 0; i < net.num_layers(); ++i)
      CHECK_FALSE((plan.layouts(i).bottom_implicit || plan.layouts(i).top_implicit));
  }
}
