// Trains the installed LeNet config for a few steps on one random batch
// through taihu's installed headers and libraries; prints the losses.
//   consumer NET.ini
#include <cstdio>
#include <memory>

#include "core/common/random.hpp"
#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer NET.ini\n");
    return 2;
  }
  using namespace taihu;
  auto description = std::make_shared<config::Document>(config::Document::parse_file(argv[1]));
  Net net(description, 16, 1);
  const auto solver_doc = config::Document::parse("[solver]\ntype = sgd\nbase_lr = 0.05\nmomentum = 0.9\n", "consumer");
  auto solver = Solver::create(solver_doc.section("solver"), net.learnable_params());
  Rng rng(7);
  Blob& data = net.blob("data");
  for (int64_t i = 0; i < data.count(); ++i) data.data()[i] = rng.uniform();
  Blob& label = net.blob("label");
  for (int64_t i = 0; i < label.count(); ++i) label.data()[i] = static_cast<float>(rng.below(10));
  float first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    net.zero_param_diffs();
    last = net.forward_backward();
    if (step == 0) first = last;
    solver->step();
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  return last < first ? 0 : 1;
}
