#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/solver/lr_policy.hpp"
#include "core/solver/solver.hpp"
#include "support/layer_fixture.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;

namespace {

// Parameters built by hand, with stable addresses.
struct ParamSet {
  std::deque<Param> list;

  Param& add(const std::string& name, const Shape& shape, std::vector<float> values = {},
             float lr_mult = 1.0f, float decay_mult = 1.0f, bool learnable = true) {
    Param p;
    p.blob = std::make_shared<Blob>(shape);
    p.name = name;
    p.lr_mult = lr_mult;
    p.decay_mult = decay_mult;
    p.learnable = learnable;
    for (size_t i = 0; i < values.size(); ++i) p.blob->data()[static_cast<int64_t>(i)] = values[i];
    list.push_back(std::move(p));
    return list.back();
  }
  std::vector<Param*> pointers() {
    std::vector<Param*> out;
    for (auto& p : list) out.push_back(&p);
    return out;
  }
};

void set_diff(Param& p, std::vector<float> values) {
  for (size_t i = 0; i < values.size(); ++i) p.blob->diff()[static_cast<int64_t>(i)] = values[i];
}
float w(const Param& p, int64_t i = 0) { return p.blob->data()[i]; }

config::Document solver_doc(const std::string& text) {
  return config::Document::parse("[solver]\n" + text + "\n", "solver.ini");
}

std::unique_ptr<Solver> make_solver(const config::Document& doc, ParamSet& params, int64_t max_iter = 0) {
  auto solver = Solver::create(doc.section("solver"), params.pointers(), max_iter);
  doc.section("solver").reject_unused();  // every key given was understood
  return solver;
}

std::string error_of(auto&& f) { return taihu::testing::error_message<std::exception>(f); }

LrPolicy policy(const std::string& text, int64_t fallback = 0) {
  auto doc = solver_doc(text);
  auto p = LrPolicy::from_options(doc.section("solver"), fallback);
  doc.section("solver").reject_unused();
  return p;
}

// f(w) = 1/2 sum_i a_i (w_i - c_i)^2 over a 2x3 weight and a 3-element bias.
struct Quadratic {
  ParamSet params;
  Param* weight;
  Param* bias;
  std::vector<float> a, c;
  Quadratic() {
    weight = &params.add("fc/weight", Shape{2, 3}, {0.5f, -0.5f, 0.2f, 0.1f, 0.3f, -0.2f});
    bias = &params.add("fc/bias", Shape{3}, {0.1f, 0.1f, 0.1f});
    for (int i = 0; i < 9; ++i) {
      a.push_back(0.5f + 0.25f * static_cast<float>(i));
      c.push_back(std::sin(1.0f + static_cast<float>(i)));
    }
  }
  float& value(int i) { return i < 6 ? weight->blob->data()[i] : bias->blob->data()[i - 6]; }
  float& grad(int i) { return i < 6 ? weight->blob->diff()[i] : bias->blob->diff()[i - 6]; }
  // Sets the gradient; `noise` perturbs it deterministically per iteration.
  void compute_gradient(int64_t iteration = 0, float noise = 0.0f) {
    for (int i = 0; i < 9; ++i)
      grad(i) = a[i] * (value(i) - c[i]) + noise * std::sin(0.7f * static_cast<float>(iteration * 9 + i));
  }
  double distance() {
    double s = 0.0;
    for (int i = 0; i < 9; ++i) s += (value(i) - c[i]) * (value(i) - c[i]);
    return std::sqrt(s);
  }
};

}  // namespace

TEST_SUITE("solver") {
  TEST_CASE("a row-sparse gradient: plain SGD updates its rows only, with the whole table's bits") {
    // An 8 x 5 table whose gradient is in rows 1, 4 and 6; rows 2 and 4 are
    // listed but 2 has no gradient (a listed row may be zero).
    const auto run = [](const std::string& text, bool hinted, float clip = 0.0f) {
      ParamSet ps;
      std::vector<float> init(40), bias_init{0.5f, -0.25f};
      for (int i = 0; i < 40; ++i) init[static_cast<size_t>(i)] = 0.01f * static_cast<float>(i * 7 % 13) - 0.05f;
      Param& table = ps.add("table", Shape{8, 5}, init);
      Param& bias = ps.add("bias", Shape{2}, bias_init);
      auto doc = solver_doc(text + (clip > 0 ? "\nclip_gradients = " + std::to_string(clip) : std::string()));
      auto solver = make_solver(doc, ps);
      for (int step = 0; step < 3; ++step) {
        table.blob->diff().zero();
        for (int row : {1, 4, 6})
          for (int c = 0; c < 5; ++c) table.blob->diff()[row * 5 + c] = 0.3f * static_cast<float>(row - c) + 0.1f * step;
        set_diff(bias, {0.2f, -0.1f});
        const std::vector<RowSparseGradient> sparse{{table.blob.get(), {1, 2, 4, 6}}};
        if (hinted)
          solver->step(sparse);
        else
          solver->step();
      }
      std::vector<float> out(table.blob->data().ptr(), table.blob->data().ptr() + 40);
      out.push_back(w(bias, 0));
      out.push_back(w(bias, 1));
      for (auto& [name, t] : solver->state()) out.insert(out.end(), t->ptr(), t->ptr() + t->count());
      return out;
    };
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    // Plain SGD, with and without clipping: the hint changes nothing.
    for (const float clip : {0.0f, 0.5f}) {
      const auto dense = run("base_lr = 0.1\nmomentum = 0", false, clip);
      CHECK(same_bits(run("base_lr = 0.1\nmomentum = 0", true, clip), dense));
      CHECK(dense[0] == doctest::Approx(-0.05));  // row 0 never moved
    }
    // Momentum and weight decay move untouched rows: they ignore the hint.
    for (const char* text : {"base_lr = 0.1\nmomentum = 0.9", "base_lr = 0.1\nmomentum = 0\nweight_decay = 0.01",
                             "type = nesterov\nbase_lr = 0.1", "type = adam\nbase_lr = 0.1"}) {
      CAPTURE(text);
      CHECK(same_bits(run(text, true), run(text, false)));
    }
    // What the hint does: a gradient outside its rows is not applied.
    ParamSet ps;
    Param& table = ps.add("table", Shape{3, 2}, {1, 1, 1, 1, 1, 1});
    auto doc = solver_doc("base_lr = 1\nmomentum = 0");
    auto solver = make_solver(doc, ps);
    set_diff(table, {1, 1, 1, 1, 1, 1});
    solver->step(std::vector<RowSparseGradient>{{table.blob.get(), {1}}});
    CHECK(std::vector<float>(table.blob->data().ptr(), table.blob->data().ptr() + 6) ==
          std::vector<float>{1, 1, 0, 0, 1, 1});
    CHECK(error_of([&] { solver->step(std::vector<RowSparseGradient>{{table.blob.get(), {3}}}); })
              .find("row 3 outside [0, 3)") != std::string::npos);
  }

  TEST_CASE("sgd with momentum: hand-computed steps") {
    ParamSet ps;
    Param& p = ps.add("w", Shape{2}, {1.0f, -2.0f});
    auto doc = solver_doc("type = sgd\nbase_lr = 0.1\nmomentum = 0.9");
    auto solver = make_solver(doc, ps);
    CHECK(std::string(solver->type()) == "sgd");
    set_diff(p, {0.5f, 1.0f});
    solver->step();  // v = g; w -= 0.1 v
    CHECK(w(p, 0) == doctest::Approx(0.95));
    CHECK(w(p, 1) == doctest::Approx(-2.1));
    solver->step();  // v = 0.9 v + g = 0.95, 1.9
    CHECK(w(p, 0) == doctest::Approx(0.855));
    CHECK(w(p, 1) == doctest::Approx(-2.29));
    CHECK(solver->iteration() == 2);
    // Plain SGD.
    ParamSet ps2;
    Param& q = ps2.add("w", Shape{1}, {1.0f});
    auto plain_doc = solver_doc("base_lr = 0.5\nmomentum = 0");
    auto plain = make_solver(plain_doc, ps2);
    set_diff(q, {0.5f});
    plain->step();
    plain->step();
    CHECK(w(q) == doctest::Approx(0.5));
  }

  TEST_CASE("sgd with Nesterov momentum: hand-computed steps") {
    for (const std::string cfg : {"type = sgd\nnesterov = true", "type = nesterov"}) {
      CAPTURE(cfg);
      ParamSet ps;
      Param& p = ps.add("w", Shape{1}, {1.0f});
      auto doc = solver_doc(cfg + "\nbase_lr = 0.1\nmomentum = 0.9");
      auto solver = make_solver(doc, ps);
      CHECK(std::string(solver->type()) == "nesterov");
      set_diff(p, {0.5f});
      solver->step();  // v = 0.5; w -= 0.1 (0.5 + 0.9 * 0.5)
      CHECK(w(p) == doctest::Approx(0.905));
      solver->step();  // v = 0.95; w -= 0.1 (0.5 + 0.855)
      CHECK(w(p) == doctest::Approx(0.7695));
    }
  }

  TEST_CASE("weight decay is added to the gradient, scaled by decay_mult") {
    ParamSet ps;
    Param& p = ps.add("w", Shape{1}, {1.0f});
    auto doc = solver_doc("base_lr = 0.1\nmomentum = 0.9\nweight_decay = 0.1");
    auto solver = make_solver(doc, ps);
    set_diff(p, {0.5f});
    solver->step();  // g = 0.5 + 0.1 * 1 = 0.6
    CHECK(w(p) == doctest::Approx(0.94));
    solver->step();  // g = 0.5 + 0.094 = 0.594; v = 0.54 + 0.594 = 1.134
    CHECK(w(p) == doctest::Approx(0.94 - 0.1134));
  }

  TEST_CASE("adam: hand-computed steps with bias correction") {
    ParamSet ps;
    Param& p = ps.add("w", Shape{1}, {1.0f});
    auto doc = solver_doc("type = adam\nbase_lr = 0.1\nbeta1 = 0.9\nbeta2 = 0.999\neps = 1e-8");
    auto solver = make_solver(doc, ps);
    set_diff(p, {0.5f});
    solver->step();  // m_hat = 0.5, v_hat = 0.25: a step of exactly lr
    CHECK(w(p) == doctest::Approx(0.9));
    set_diff(p, {-1.0f});
    solver->step();
    // m = 0.9 * 0.05 - 0.1 = -0.055, v = 0.999 * 0.00025 + 0.001 = 0.00124975
    const double m_hat = -0.055 / (1 - 0.81), v_hat = 0.00124975 / (1 - 0.998001);
    CHECK(w(p) == doctest::Approx(0.9 - 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8)).epsilon(1e-5));
    CHECK(w(p) == doctest::Approx(0.936610).epsilon(1e-5));
  }

  TEST_CASE("adamw decouples weight decay from the adaptive step; adam does not") {
    auto run = [](const std::string& type, float decay) {
      ParamSet ps;
      Param& p = ps.add("w", Shape{1}, {1.0f});
      auto doc = solver_doc("type = " + type + "\nbase_lr = 0.1\nweight_decay = " + std::to_string(decay));
      auto solver = make_solver(doc, ps);
      set_diff(p, {0.5f});
      solver->step();
      return w(p);
    };
    // Adam's first step has size lr whatever the gradient, decay included.
    CHECK(run("adam", 0.1f) == doctest::Approx(0.9));
    // AdamW shrinks first: w = (1 - lr * decay) w - lr * m_hat / sqrt(v_hat).
    CHECK(run("adamw", 0.1f) == doctest::Approx(0.89));
    CHECK(run("adamw", 0.0f) == run("adam", 0.0f));

    // Over a few steps with a changing gradient the decay enters Adam's moments.
    ParamSet pa, pw;
    Param& a = pa.add("w", Shape{1}, {2.0f});
    Param& b = pw.add("w", Shape{1}, {2.0f});
    auto da = solver_doc("type = adam\nbase_lr = 0.01\nweight_decay = 0.5");
    auto dw = solver_doc("type = adamw\nbase_lr = 0.01\nweight_decay = 0.5");
    auto sa = make_solver(da, pa), sw = make_solver(dw, pw);
    double m = 0, v = 0, x = 2.0;  // reference adam with L2
    for (int t = 1; t <= 3; ++t) {
      const float g = 0.1f * static_cast<float>(t);
      set_diff(a, {g});
      set_diff(b, {g});
      sa->step();
      sw->step();
      const double gg = g + 0.5 * x;
      m = 0.9 * m + 0.1 * gg;
      v = 0.999 * v + 0.001 * gg * gg;
      x -= 0.01 * (m / (1 - std::pow(0.9, t))) / (std::sqrt(v / (1 - std::pow(0.999, t))) + 1e-8);
    }
    CHECK(w(a) == doctest::Approx(x).epsilon(1e-5));
    CHECK(w(a) != doctest::Approx(w(b)).epsilon(1e-4));
  }

  TEST_CASE("lars: layer-wise trust ratio") {
    ParamSet ps;
    Param& p = ps.add("fc/weight", Shape{1, 2}, {3.0f, 4.0f});  // ||w|| = 5
    Param& bias = ps.add("fc/bias", Shape{2}, {3.0f, 4.0f});
    Param& zero = ps.add("fc2/weight", Shape{2, 1}, {0.0f, 0.0f});
    auto doc = solver_doc("type = lars\nbase_lr = 2\nmomentum = 0.9\nweight_decay = 0.01\n"
                          "trust_coefficient = 0.001\nlars_exclude_1d = true");
    auto solver = make_solver(doc, ps);
    set_diff(p, {0.6f, 0.8f});  // ||g|| = 1
    set_diff(bias, {0.6f, 0.8f});
    set_diff(zero, {1.0f, -1.0f});
    solver->step();
    const double local = 2.0 * 0.001 * 5.0 / (1.0 + 0.01 * 5.0);
    const double v0 = local * (0.6 + 0.03), v1 = local * (0.8 + 0.04);
    CHECK(w(p, 0) == doctest::Approx(3.0 - v0));
    CHECK(w(p, 1) == doctest::Approx(4.0 - v1));
    // 1-D params are excluded: plain momentum SGD at rate lr.
    CHECK(w(bias, 0) == doctest::Approx(3.0 - 2.0 * 0.63));
    // ||w|| = 0: the trust ratio falls back to 1.
    CHECK(w(zero, 0) == doctest::Approx(-2.0));
    CHECK(w(zero, 1) == doctest::Approx(2.0));

    // Second step: momentum carries v; the ratio uses the new weights.
    const double w0 = 3.0 - v0, w1 = 4.0 - v1;
    const double wn = std::sqrt(w0 * w0 + w1 * w1);
    const double local2 = 2.0 * 0.001 * wn / (1.0 + 0.01 * wn);
    solver->step();
    CHECK(w(p, 0) == doctest::Approx(w0 - (0.9 * v0 + local2 * (0.6 + 0.01 * w0))));
    CHECK(w(p, 1) == doctest::Approx(w1 - (0.9 * v1 + local2 * (0.8 + 0.01 * w1))));

    // Without the exclusion, the bias gets a trust ratio too.
    ParamSet ps2;
    Param& b2 = ps2.add("fc/bias", Shape{2}, {3.0f, 4.0f});
    auto doc2 = solver_doc("type = lars\nbase_lr = 2\nweight_decay = 0.01");
    auto solver2 = make_solver(doc2, ps2);
    set_diff(b2, {0.6f, 0.8f});
    solver2->step();
    CHECK(w(b2, 0) == doctest::Approx(3.0 - local * 0.63));
  }

  TEST_CASE("learning-rate policies at specific iterations") {
    auto fixed = policy("base_lr = 0.1");
    CHECK(fixed.at(0) == doctest::Approx(0.1));
    CHECK(fixed.at(100000) == doctest::Approx(0.1));

    auto step = policy("base_lr = 1\nlr_policy = step\ngamma = 0.5\nstepsize = 10");
    CHECK(step.at(0) == doctest::Approx(1.0));
    CHECK(step.at(9) == doctest::Approx(1.0));
    CHECK(step.at(10) == doctest::Approx(0.5));
    CHECK(step.at(25) == doctest::Approx(0.25));

    auto multi = policy("base_lr = 1\nlr_policy = multistep\ngamma = 0.1\nstepvalue = 5 8 20");
    CHECK(multi.at(4) == doctest::Approx(1.0));
    CHECK(multi.at(5) == doctest::Approx(0.1));
    CHECK(multi.at(7) == doctest::Approx(0.1));
    CHECK(multi.at(8) == doctest::Approx(0.01));
    CHECK(multi.at(100) == doctest::Approx(0.001));

    auto poly = policy("base_lr = 2\nlr_policy = poly\npower = 2\nmax_iter = 100");
    CHECK(poly.at(0) == doctest::Approx(2.0));
    CHECK(poly.at(50) == doctest::Approx(0.5));
    CHECK(poly.at(90) == doctest::Approx(0.02));
    CHECK(poly.at(100) == 0.0f);
    CHECK(poly.at(150) == 0.0f);

    auto cosine = policy("base_lr = 1\nlr_policy = cosine\nmax_iter = 100\nmin_lr = 0.1");
    CHECK(cosine.at(0) == doctest::Approx(1.0));
    CHECK(cosine.at(50) == doctest::Approx(0.55));
    CHECK(cosine.at(25) == doctest::Approx(0.1 + 0.9 * 0.5 * (1 + std::sqrt(0.5))));
    CHECK(cosine.at(100) == doctest::Approx(0.1));
    CHECK(cosine.at(200) == doctest::Approx(0.1));
    auto cosine0 = policy("base_lr = 1\nlr_policy = cosine", 200);  // max_iter from the trainer
    CHECK(cosine0.max_iter == 200);
    CHECK(cosine0.at(100) == doctest::Approx(0.5));
    CHECK(cosine0.at(200) == doctest::Approx(0.0));
  }

  TEST_CASE("linear warm-up multiplies any policy") {
    auto warm = policy("base_lr = 1\nwarmup_iters = 10");
    CHECK(warm.at(0) == doctest::Approx(0.1));
    CHECK(warm.at(5) == doctest::Approx(0.55));
    CHECK(warm.at(9) == doctest::Approx(0.91));
    CHECK(warm.at(10) == doctest::Approx(1.0));
    CHECK(warm.at(50) == doctest::Approx(1.0));

    auto warm_step =
        policy("base_lr = 1\nlr_policy = step\ngamma = 0.1\nstepsize = 4\nwarmup_iters = 8\nwarmup_start_factor = 0");
    CHECK(warm_step.at(0) == 0.0f);
    CHECK(warm_step.at(2) == doctest::Approx(0.25));
    CHECK(warm_step.at(4) == doctest::Approx(0.1 * 0.5));
    CHECK(warm_step.at(8) == doctest::Approx(0.01));

    // The solver's learning_rate() follows its iteration.
    ParamSet ps;
    Param& p = ps.add("w", Shape{1}, {0.0f});
    auto doc = solver_doc("base_lr = 1\nmomentum = 0\nwarmup_iters = 4\nwarmup_start_factor = 0.2");
    auto solver = make_solver(doc, ps);
    set_diff(p, {1.0f});
    std::vector<float> seen;
    for (int i = 0; i < 6; ++i) {
      seen.push_back(solver->learning_rate());
      solver->step();
    }
    const std::vector<float> expected{0.2f, 0.4f, 0.6f, 0.8f, 1.0f, 1.0f};
    for (int i = 0; i < 6; ++i) CHECK(seen[i] == doctest::Approx(expected[i]));
    CHECK(w(p) == doctest::Approx(-4.0));  // the steps used exactly these rates
    solver->set_iteration(1);
    CHECK(solver->learning_rate() == doctest::Approx(0.4));
  }

  TEST_CASE("gradient clipping scales the global norm exactly to the threshold") {
    ParamSet ps;
    Param& a = ps.add("a", Shape{2}, {0.0f, 0.0f});
    Param& b = ps.add("b", Shape{1, 1}, {0.0f});
    Param& frozen_state = ps.add("bn/mean", Shape{1}, {0.0f}, 0.0f, 0.0f, false);
    auto doc = solver_doc("base_lr = 1\nmomentum = 0\nclip_gradients = 2");
    auto solver = make_solver(doc, ps);
    set_diff(a, {3.0f, 0.0f});
    set_diff(b, {4.0f});
    set_diff(frozen_state, {100.0f});  // not learnable: neither counted nor updated
    solver->step();
    CHECK(solver->last_gradient_norm() == doctest::Approx(5.0));
    const double moved = std::sqrt(w(a, 0) * w(a, 0) + w(a, 1) * w(a, 1) + w(b) * w(b));
    CHECK(moved == doctest::Approx(2.0).epsilon(1e-6));
    CHECK(w(a, 0) == doctest::Approx(-1.2));
    CHECK(w(b) == doctest::Approx(-1.6));
    CHECK(w(frozen_state) == 0.0f);
    // The diffs themselves are left as they were.
    CHECK(a.blob->diff()[0] == 3.0f);

    // Below the threshold nothing is scaled.
    set_diff(a, {0.3f, 0.0f});
    set_diff(b, {0.4f});
    solver->step();
    CHECK(solver->last_gradient_norm() == doctest::Approx(0.5));
    CHECK(w(a, 0) == doctest::Approx(-1.5));
    CHECK(w(b) == doctest::Approx(-2.0));
  }

  TEST_CASE("lr_mult and decay_mult are respected; non-learnable params are untouched") {
    ParamSet ps;
    Param& fast = ps.add("fast", Shape{1}, {1.0f}, 2.0f, 1.0f);
    Param& no_decay = ps.add("no_decay", Shape{1}, {1.0f}, 1.0f, 0.0f);
    Param& double_decay = ps.add("double_decay", Shape{1}, {1.0f}, 1.0f, 2.0f);
    Param& frozen = ps.add("frozen", Shape{1}, {1.0f}, 0.0f, 1.0f);
    Param& state = ps.add("running", Shape{1}, {1.0f}, 0.0f, 0.0f, false);
    for (Param* p : ps.pointers()) set_diff(*p, {0.2f});
    for (const std::string type : {"sgd", "adam", "adamw", "lars"}) {
      CAPTURE(type);
      for (Param* p : ps.pointers()) p->blob->data()[0] = 1.0f;
      auto doc = solver_doc("type = " + type + "\nbase_lr = 0.1\nweight_decay = 0.5" +
                            (type == "adam" || type == "adamw" ? "" : "\nmomentum = 0"));
      auto solver = make_solver(doc, ps);
      solver->step();
      CHECK(w(frozen) == 1.0f);
      CHECK(w(state) == 1.0f);
      if (type == "sgd") {
        CHECK(w(fast) == doctest::Approx(1.0 - 0.2 * (0.2 + 0.5)));
        CHECK(w(no_decay) == doctest::Approx(1.0 - 0.1 * 0.2));
        CHECK(w(double_decay) == doctest::Approx(1.0 - 0.1 * (0.2 + 1.0)));
      } else if (type == "adamw") {
        CHECK(w(fast) == doctest::Approx((1.0 - 0.2 * 0.5) - 0.2));
        CHECK(w(no_decay) == doctest::Approx(1.0 - 0.1));
        CHECK(w(double_decay) == doctest::Approx((1.0 - 0.1 * 1.0) - 0.1));
      } else if (type == "adam") {
        CHECK(w(fast) == doctest::Approx(0.8));  // first Adam step: size lr * lr_mult
        CHECK(w(no_decay) == doctest::Approx(0.9));
      } else {  // lars: ||w|| = 1, ||g|| = 0.2
        CHECK(w(fast) == doctest::Approx(1.0 - 0.2 * 0.001 / (0.2 + 0.5) * 0.7));
        CHECK(w(no_decay) == doctest::Approx(1.0 - 0.1 * 0.001 / 0.2 * 0.2));
      }
      // State covers exactly the learnable params.
      for (const auto& [name, tensor] : solver->state()) {
        CHECK(name.rfind("running", 0) != 0);
        CHECK(tensor->count() == 1);
      }
    }
  }

  TEST_CASE("multipliers and names come from a layer's options") {
    auto layer = testing::make_layer("Scale", "bias_term = true\nweight_lr_mult = 2\nbias_decay_mult = 0");
    Blob x(Shape{2, 3}), y;
    layer->setup({&x}, {&y});
    std::vector<Param*> params;
    for (auto& p : layer->params()) params.push_back(&p);
    auto doc = solver_doc("type = sgd\nbase_lr = 0.1\nmomentum = 0\nweight_decay = 1");
    auto solver = Solver::create(doc.section("solver"), params);
    for (auto* p : params) p->blob->diff().fill(1.0f);
    solver->step();
    CHECK(layer->params()[0].blob->data()[0] == doctest::Approx(1.0 - 0.2 * (1.0 + 1.0)));  // weight 1
    CHECK(layer->params()[1].blob->data()[0] == doctest::Approx(-0.1));                     // bias 0
    const auto state = solver->state();
    REQUIRE(state.size() == 2);
    CHECK(state[0].first == "test/weight/momentum");
    CHECK(state[1].first == "test/bias/momentum");

    auto adam_doc = solver_doc("type = adam\nbase_lr = 0.1");
    auto adam = Solver::create(adam_doc.section("solver"), params);
    const auto adam_state = adam->state();
    REQUIRE(adam_state.size() == 4);
    CHECK(adam_state[0].first == "test/weight/moment1");
    CHECK(adam_state[1].first == "test/weight/moment2");
    CHECK(adam_state[3].first == "test/bias/moment2");
  }

  TEST_CASE("every solver converges on a quadratic") {
    struct Case {
      std::string config;
      int iterations;
      double tolerance;
    };
    const std::vector<Case> cases{
        {"type = sgd\nbase_lr = 0.1\nmomentum = 0.9", 300, 1e-4},
        {"type = sgd\nbase_lr = 0.2\nmomentum = 0", 300, 1e-4},
        {"type = nesterov\nbase_lr = 0.1\nmomentum = 0.9", 300, 1e-4},
        {"type = adam\nbase_lr = 0.05\nlr_policy = cosine\nmax_iter = 600", 600, 1e-3},
        {"type = adamw\nbase_lr = 0.05\nlr_policy = cosine\nmax_iter = 600\nwarmup_iters = 20", 600, 1e-3},
        {"type = lars\nbase_lr = 1\ntrust_coefficient = 0.05\nlr_policy = poly\npower = 2\nmax_iter = 600", 600,
         1e-3},
        {"type = sgd\nbase_lr = 0.05\nmomentum = 0.9\nclip_gradients = 0.5", 400, 1e-4},
    };
    for (const auto& c : cases) {
      CAPTURE(c.config);
      Quadratic q;
      auto doc = solver_doc(c.config);
      auto solver = make_solver(doc, q.params);
      const double start = q.distance();
      for (int it = 0; it < c.iterations; ++it) {
        q.compute_gradient();
        solver->step();
      }
      CHECK(q.distance() < c.tolerance * start);
    }
    // AdamW with decay converges to a shrunk optimum: |w| below |c|.
    Quadratic q;
    auto doc = solver_doc("type = adamw\nbase_lr = 0.05\nweight_decay = 0.2\nlr_policy = cosine\nmax_iter = 600");
    auto solver = make_solver(doc, q.params);
    for (int it = 0; it < 600; ++it) {
      q.compute_gradient();
      solver->step();
    }
    for (int i = 0; i < 9; ++i) CHECK(std::fabs(q.value(i)) < std::fabs(q.c[i]));
  }

  TEST_CASE("restoring state() continues bit-identically") {
    const std::vector<std::string> configs{
        "type = sgd\nbase_lr = 0.05\nmomentum = 0.9\nweight_decay = 0.01\nlr_policy = cosine\nmax_iter = 40\n"
        "warmup_iters = 5",
        "type = nesterov\nbase_lr = 0.05\nclip_gradients = 0.5",
        "type = adam\nbase_lr = 0.01\nweight_decay = 0.01\nwarmup_iters = 8",
        "type = adamw\nbase_lr = 0.01\nweight_decay = 0.1\nlr_policy = step\nstepsize = 7\ngamma = 0.5",
        "type = lars\nbase_lr = 0.5\nweight_decay = 0.001\nlr_policy = poly\nmax_iter = 40\nlars_exclude_1d = true",
    };
    for (const auto& cfg : configs) {
      CAPTURE(cfg);
      auto doc = solver_doc(cfg);
      Quadratic run;
      auto solver = make_solver(doc, run.params);
      for (int it = 0; it < 6; ++it) {
        run.compute_gradient(it, 0.3f);
        solver->step();
      }
      // Checkpoint: weights, iteration, history.
      std::vector<float> weights;
      for (int i = 0; i < 9; ++i) weights.push_back(run.value(i));
      const int64_t iteration = solver->iteration();
      std::map<std::string, std::vector<float>> saved;
      for (const auto& [name, t] : solver->state()) saved[name].assign(t->ptr(), t->ptr() + t->count());
      CHECK_FALSE(saved.empty());
      for (int it = 6; it < 12; ++it) {
        run.compute_gradient(it, 0.3f);
        solver->step();
      }

      auto resume = [&](bool restore) {
        Quadratic q;
        for (int i = 0; i < 9; ++i) q.value(i) = weights[i];
        auto resumed = make_solver(doc, q.params);
        if (restore) {
          resumed->set_iteration(iteration);
          auto state = resumed->state();
          REQUIRE(state.size() == saved.size());
          for (const auto& [name, t] : state) {
            REQUIRE(saved.count(name) == 1);
            std::memcpy(t->ptr(), saved[name].data(), saved[name].size() * sizeof(float));
          }
        }
        for (int it = 6; it < 12; ++it) {
          q.compute_gradient(it, 0.3f);
          resumed->step();
        }
        int identical = 0;
        for (int i = 0; i < 9; ++i) {
          const float x = q.value(i), y = run.value(i);
          identical += std::memcmp(&x, &y, sizeof(float)) == 0;
        }
        return identical;
      };
      CHECK(resume(true) == 9);
      CHECK(resume(false) < 9);  // the state matters
    }
  }

  TEST_CASE("solver config errors name the key; unknown keys are left for reject_unused") {
    ParamSet ps;
    ps.add("w", Shape{1}, {1.0f});
    auto err = [&](const std::string& text) {
      return error_of([&] {
        auto doc = solver_doc(text);
        Solver::create(doc.section("solver"), ps.pointers());
      });
    };
    auto names = [&](const std::string& text, const std::string& key) {
      CAPTURE(text);
      const auto msg = err(text);
      CAPTURE(msg);
      CHECK(msg.find("'" + key + "'") != std::string::npos);
      CHECK(msg.find("solver.ini") != std::string::npos);
    };
    names("type = sgdx\nbase_lr = 0.1", "type");
    names("momentum = 0.9", "base_lr");
    CHECK(err("momentum = 0.9").find("required") != std::string::npos);
    names("base_lr = -0.1", "base_lr");
    names("base_lr = 0.1\nmomentum = 1", "momentum");
    names("base_lr = 0.1\nmomentum = -0.5", "momentum");
    names("base_lr = 0.1\nweight_decay = -1", "weight_decay");
    names("base_lr = 0.1\nclip_gradients = -1", "clip_gradients");
    names("type = nesterov\nbase_lr = 0.1\nmomentum = 0", "momentum");
    names("type = adam\nbase_lr = 0.1\nbeta2 = 1", "beta2");
    names("type = adamw\nbase_lr = 0.1\nbeta1 = 1.5", "beta1");
    names("type = adam\nbase_lr = 0.1\neps = 0", "eps");
    names("type = lars\nbase_lr = 0.1\ntrust_coefficient = 0", "trust_coefficient");
    names("base_lr = 0.1\nlr_policy = poly", "max_iter");
    names("base_lr = 0.1\nlr_policy = cosine\nmax_iter = 0", "max_iter");
    names("base_lr = 0.1\nlr_policy = step", "stepsize");
    names("base_lr = 0.1\nlr_policy = step\nstepsize = 5\ngamma = 0", "gamma");
    names("base_lr = 0.1\nlr_policy = multistep\nstepvalue = 5 3", "stepvalue");
    names("base_lr = 0.1\nlr_policy = exp", "lr_policy");
    names("base_lr = 0.1\nwarmup_iters = -1", "warmup_iters");
    names("base_lr = 0.1\nwarmup_start_factor = 2", "warmup_start_factor");
    names("base_lr = 0.1\nlr_policy = cosine\nmax_iter = 10\nmin_lr = 1", "min_lr");

    // Keys a solver does not use stay unread.
    for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
             {"type = adam\nbase_lr = 0.1\nmomentum = 0.9", "momentum"},
             {"type = sgd\nbase_lr = 0.1\ngamma = 0.1", "gamma"},
             {"type = sgd\nbase_lr = 0.1\nbeta1 = 0.9", "beta1"},
             {"type = sgd\nbase_lr = 0.1\ntrust_coefficient = 0.9", "trust_coefficient"}}) {
      auto doc = solver_doc(text);
      Solver::create(doc.section("solver"), ps.pointers());
      const auto msg = error_of([&] { doc.section("solver").reject_unused(); });
      CHECK(msg.find(key) != std::string::npos);
      CHECK(msg.find("unknown option") != std::string::npos);
    }
    // max_iter is accepted under any policy (it is also the run's length).
    auto doc = solver_doc("base_lr = 0.1\nmax_iter = 100");
    Solver::create(doc.section("solver"), ps.pointers());
    CHECK_NOTHROW(doc.section("solver").reject_unused());
  }
}
