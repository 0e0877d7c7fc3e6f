#include "actors/device/sw26010_executor.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>  // the destructor waits for the core groups
#include <caf/typed_event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <optional>

#include "actors/ask.hpp"
#include "actors/exception_reason.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/error.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/layer_timing.hpp"
#include "devices/sw26010/lockstep_range.hpp"
#include "devices/sw26010/net_plan.hpp"
#include "messages/type_ids.hpp"

namespace taihu::device {

namespace {

using sw26010::NetPlan;
using sw26010::Pass;
using sw26010::Placement;
using sw26010::Stage;

// One core group: runs its share of each phase it is sent on its CoreGroup
// (the plan's group `group`, touched by no one else while a phase runs).
core_group_actor::behavior_type core_group(core_group_actor::pointer, std::shared_ptr<NetPlan> plan, int group) {
  return {
      [plan, group](const msg::CoreGroupWork& w) -> caf::result<msg::CoreGroupDone> {
        enable_flush_to_zero();  // whichever scheduler thread runs this
        try {
          const auto stats = plan->run(group, w.layer, w.backward ? Pass::backward : Pass::forward, w.phase);
          return msg::CoreGroupDone{std::uint32_t(group), w.layer, w.phase, stats.cycles, stats.dma_bytes};
        } catch (const ShapeError& e) {
          // the model's errors: NetPlan::run named the layer, the core group and its share
          return caf::make_error(caf::sec::runtime_error, std::string(e.what()));
        } catch (const sw26010::SimulationError& e) {
          return caf::make_error(caf::sec::runtime_error, std::string(e.what()));
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error,
                                 fmt::format("core group {}, layer '{}': {}", group,
                                             plan->net().layer(w.layer).name(), e.what()));
        }
      },
  };
}

struct LayerCycles {
  std::int64_t forward = 0, data = 0, weight = 0;
};

}  // namespace

struct Sw26010Executor::Impl {
  caf::actor_system& system;
  Net& net;
  std::shared_ptr<NetPlan> plan;
  std::vector<core_group_actor> groups;  // Chip::groups of them
  std::vector<LayerCycles> cycles;  // summed over timed iterations
  std::int64_t update_cycles = 0;   // the solver step of one iteration
  std::int64_t update_total = 0;    // summed over timed iterations
  bool timing = false;
  int64_t iterations = 0, images = 0, batch = 0;
  double host_seconds = 0.0, host_cpu_seconds = 0.0;
  std::chrono::steady_clock::time_point started;
  std::clock_t cpu_started = 0;
  // The iteration across the lock-step ranges: the timed iteration and the
  // corners (timing only, timed once, when first reported).
  mutable std::optional<sw26010::OutputRange> lockstep_range;

  Impl(caf::actor_system& s, Net& n, const sw26010::Params& params)
      : system(s), net(n), plan(std::make_shared<NetPlan>(n, params)), cycles(n.num_layers()) {
    for (int g = 0; g < sw26010::Chip::groups; ++g) groups.push_back(system.spawn(core_group, plan, g));
    // The solver step follows every backward pass. It is charged as swCaffe's SGD step
    // (decay, momentum and update on the MPE, a CPE copy; iteration.hpp), whichever solver
    // the host runs: swCaffe has no other. Its time depends only on the parameter count.
    sw26010::CoreGroup scratch(0, params);
    scratch.set_numerics(false);
    update_cycles = sw26010::sgd_update(scratch, n.num_learnable_parameters());
  }
  // Waits for the groups to be gone: a step dropped during a phase (its run
  // stopped) leaves groups working on the net's blobs, which go with this.
  ~Impl() {
    caf::scoped_actor self{system};
    for (auto& g : groups) self->send_exit(g, caf::exit_reason::user_shutdown);
    self->wait_for(groups);
  }

  std::int64_t sync_cycles() const { return std::int64_t(std::ceil(plan->params().cg_sync_cycles)); }

  // One pass of layer i: each phase on the 4 groups at once, then a sync.
  // The caller's step is suspended while the groups run a phase.
  async::Task<> run_pass(std::size_t i, Pass pass) {
    const int phases = plan->phases(i, pass);
    for (int phase = 0; phase < phases; ++phase) {
      plan->before_phase(i, pass, phase);
      const caf::expected<std::vector<msg::CoreGroupDone>> done = co_await ask_all<msg::CoreGroupDone>(
          system, groups, caf::infinite, msg::CoreGroupWork{std::uint32_t(i), pass == Pass::backward, phase});
      if (!done) throw Error("sw26010: " + reason_text(system, done.error()));
      std::int64_t slowest = 0;
      for (const msg::CoreGroupDone& group : *done) slowest = std::max(slowest, group.cycles);
      if (timing) {
        LayerCycles& c = cycles[i];
        const std::int64_t t = slowest + sync_cycles();
        switch (plan->stage(i, pass, phase)) {
          case Stage::forward: c.forward += t; break;
          case Stage::data_gradient: c.data += t; break;
          case Stage::weight_gradient: c.weight += t; break;
        }
      }
    }
    plan->finish(i, pass);
  }
};

Sw26010Executor::Sw26010Executor(caf::actor_system& system, Net& net, const sw26010::Params& params)
    : impl_(std::make_unique<Impl>(system, net, params)) {}

Sw26010Executor::~Sw26010Executor() = default;

sw26010::NetPlan& Sw26010Executor::plan() { return *impl_->plan; }

async::Task<> Sw26010Executor::forward(std::size_t i) {
  Impl& m = *impl_;
  Layer& layer = m.net.layer(i);
  const Placement where = m.plan->placement(i);
  if (m.net.phase() == Phase::test || where != Placement::device) {
    layer.forward(m.net.layer_bottoms(i), m.net.layer_tops(i));
    if (m.timing && where == Placement::host_modelled) m.cycles[i].forward += m.plan->modelled_timing(i).forward;
    co_return;
  }
  co_await m.run_pass(i, Pass::forward);
}

async::Task<> Sw26010Executor::backward(std::size_t i) {
  Impl& m = *impl_;
  Layer& layer = m.net.layer(i);
  const Placement where = m.plan->placement(i);
  if (m.net.phase() == Phase::test || where != Placement::device) {
    layer.backward(m.net.layer_tops(i), m.net.layer_propagate_down(i), m.net.layer_bottoms(i));
    if (m.timing && where == Placement::host_modelled) m.cycles[i].data += m.plan->modelled_timing(i).backward;
    co_return;
  }
  co_await m.run_pass(i, Pass::backward);
}

void Sw26010Executor::begin_iteration(int64_t batch) {
  impl_->timing = true;
  impl_->batch = batch;
  impl_->started = std::chrono::steady_clock::now();
  impl_->cpu_started = std::clock();
}

void Sw26010Executor::end_iteration() {
  Impl& m = *impl_;
  if (!m.timing) return;
  m.timing = false;
  ++m.iterations;
  m.images += m.batch;
  m.update_total += m.update_cycles;
  m.host_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - m.started).count();
  m.host_cpu_seconds += double(std::clock() - m.cpu_started) / CLOCKS_PER_SEC;
}

DeviceReport Sw26010Executor::report() const {
  const Impl& m = *impl_;
  const sw26010::Params& p = m.plan->params();
  DeviceReport r;
  r.device = "sw26010";
  r.iterations = m.iterations;
  r.images = m.images;
  r.host_seconds = m.host_seconds;
  r.host_cpu_seconds = m.host_cpu_seconds;
  const double per = m.iterations > 0 ? 1.0 / double(m.iterations) : 0.0;
  for (std::size_t i = 0; i < m.net.num_layers(); ++i) {
    const LayerCycles& c = m.cycles[i];
    DeviceLayerTime t;
    t.name = m.net.layer(i).name();
    t.type = m.net.layer(i).type();
    t.method = m.plan->method(i);
    t.simulated = m.plan->placement(i) != Placement::host;
    t.forward_seconds = p.seconds(double(c.forward)) * per;
    t.data_gradient_seconds = p.seconds(double(c.data)) * per;
    t.weight_gradient_seconds = p.seconds(double(c.weight)) * per;
    r.simulated_seconds += p.seconds(double(c.forward + c.data + c.weight));
    r.layers.push_back(std::move(t));
  }
  r.update_seconds = p.seconds(double(m.update_total));
  r.simulated_seconds += r.update_seconds;
  if (m.iterations > 0) {
    if (!m.lockstep_range) {
      // the same iteration, timing only, at each corner of the two ranges (lockstep_range.hpp)
      spdlog::info("sw26010: timing the iteration across the lock-step parameters' ranges ...");
      const std::int64_t share = (m.batch + sw26010::Chip::groups - 1) / sw26010::Chip::groups;
      m.lockstep_range = sw26010::across_lockstep_range(
          p, [&](const sw26010::Params& corner) { return sw26010::iteration_seconds(m.net, share, corner); },
          r.simulated_iteration_seconds());
    }
    // (the simulated iteration is the same every time, but the range holds it if it ever moved)
    r.simulated_iteration_low = std::min(m.lockstep_range->low, r.simulated_iteration_seconds());
    r.simulated_iteration_high = std::max(m.lockstep_range->high, r.simulated_iteration_seconds());
  }
  return r;
}

}  // namespace taihu::device
