#include "actors/sim/simulation.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <utility>

#include "actors/sync/shard_actor.hpp"
#include "core/common/check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::sim {
namespace {

// Every rank is "remote": all chunks come here, on the shards' threads.
class SimRouter final : public sync::ChunkRouter {
 public:
  bool remote(int) const override { return true; }
  void send(int rank, msg::Chunk chunk) override {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(rank, std::move(chunk));
  }
  void take(std::vector<std::pair<int, msg::Chunk>>& out) {
    out.clear();
    std::lock_guard lock(mutex_);
    out.swap(queue_);
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<int, msg::Chunk>> queue_;
};

struct Run {
  const collectives::Schedule* schedule = nullptr;
  simulator::Network* network = nullptr;
  SimOptions options;
  std::vector<msg::TensorPayload> inputs;
  std::shared_ptr<SimRouter> router = std::make_shared<SimRouter>();
  std::vector<sync::shard_actor> shards;
  std::unique_ptr<simulator::Engine> engine;
  std::vector<msg::Chunk> slots;  // chunks in flight, by Sent::handle
  std::vector<std::uint64_t> free_slots;
  std::vector<std::pair<int, msg::Chunk>> taken;
  std::vector<msg::TensorPayload> outputs;
  std::size_t reduced = 0;
  bool probing = false;
  bool finished = false;
  std::uint64_t probes = 0;
  std::promise<SimResult> promise;
};

// What the driver hears: the go (once every shard is spawned) and each
// shard's Reduced; the shards' probe replies come back as continuations.
using driver_actor = caf::typed_actor<caf::reacts_to<msg::ready_atom>, caf::reacts_to<msg::Reduced>>;
using Driver = driver_actor::base;

void stop(Driver* self, Run& run) {
  run.finished = true;
  for (auto& shard : run.shards) self->send_exit(shard, caf::exit_reason::user_shutdown);
  run.shards.clear();
  run.engine.reset();  // its callbacks hold the Run
  self->quit();
}

void fail(Driver* self, Run& run, const std::string& why) {
  if (run.finished) return;
  run.promise.set_exception(std::make_exception_ptr(Error("simulation: " + why)));
  stop(self, run);
}

// Hands the shards' new sends to the engine.
void take_sends(Run& run) {
  run.router->take(run.taken);
  for (auto& [to, chunk] : run.taken) {
    std::uint64_t handle;
    if (run.free_slots.empty()) {
      handle = run.slots.size();
      run.slots.push_back({});
    } else {
      handle = run.free_slots.back();
      run.free_slots.pop_back();
    }
    const simulator::Sent sent{chunk.sender, to, chunk.seq, chunk.offset, chunk.payload.size(), handle};
    run.slots[handle] = std::move(chunk);
    run.engine->offer(sent);
  }
}

void maybe_finish(Driver* self, Run& run) {
  if (run.finished || !run.engine->done() || run.reduced < run.shards.size()) return;
  take_sends(run);
  for (std::size_t r = 0; r < run.shards.size(); ++r) {
    if (run.engine->offered(static_cast<int>(r)) != 0) {
      return fail(self, run, "rank " + std::to_string(r) + " sent more than its schedule");
    }
  }
  SimResult result;
  result.seconds = run.engine->seconds();
  result.finish = run.engine->finish();
  result.stats = run.engine->stats();
  result.probes = run.probes;
  result.outputs = std::move(run.outputs);
  run.promise.set_value(std::move(result));
  stop(self, run);
}

void pump(Driver* self, const std::shared_ptr<Run>& run) {
  try {
    for (;;) {
      take_sends(*run);
      const int r = run->engine->run();
      if (r < 0) return maybe_finish(self, *run);
      take_sends(*run);
      if (run->engine->offered(r) > 0) continue;
      // Wait until shard r has handled everything delivered to it so far.
      run->probing = true;
      ++run->probes;
      self->request(run->shards[static_cast<std::size_t>(r)], caf::infinite, msg::stats_atom_v)
          .then(
              [self, run, r](const msg::ShardStats&) {
                run->probing = false;
                if (run->finished) return;
                take_sends(*run);
                if (run->engine->offered(r) == 0) {
                  return fail(self, *run,
                              "rank " + std::to_string(r) + "'s shard handled every delivery but did not send step " +
                                  std::to_string(run->engine->step_of(r)));
                }
                pump(self, run);
              },
              [self, run](caf::error& error) { fail(self, *run, "probe failed: " + caf::to_string(error)); });
      return;
    }
  } catch (const std::exception& e) {
    fail(self, *run, e.what());
  }
}

driver_actor::behavior_type driver(Driver* self, std::shared_ptr<Run> run) {
  self->set_down_handler([self, run](caf::down_msg& down) {
    if (!run->finished) fail(self, *run, "a shard stopped: " + caf::to_string(down.reason));
  });
  return {
      [self, run](msg::ready_atom) {
        const std::uint32_t bucket = run->options.bucket;
        for (auto& shard : run->shards) {
          self->monitor(shard);
          // No peers: the router takes every chunk.
          self->send(shard, msg::ShardInit{bucket, {}, msg::reduced_receiver{self}});
        }
        simulator::Engine::Callbacks callbacks;
        callbacks.start = [self, run, bucket](int rank) {
          auto& input = run->inputs[static_cast<std::size_t>(rank)];
          self->send(run->shards[static_cast<std::size_t>(rank)], msg::GradientReady{bucket, 0, std::move(input)});
        };
        callbacks.deliver = [self, run](int to, const simulator::Sent& sent) {
          self->send(run->shards[static_cast<std::size_t>(to)], std::move(run->slots[sent.handle]));
          run->slots[sent.handle] = {};
          run->free_slots.push_back(sent.handle);
        };
        try {
          run->engine = std::make_unique<simulator::Engine>(*run->network, run->schedule->steps, run->options.start_times,
                                                 std::move(callbacks));
        } catch (const std::exception& e) {
          return fail(self, *run, e.what());
        }
        pump(self, run);
      },
      [self, run](msg::Reduced& reduced) {
        if (run->finished) return;
        if (run->options.carry_data) run->outputs[static_cast<std::size_t>(reduced.rank)] = std::move(reduced.buffer);
        ++run->reduced;
        maybe_finish(self, *run);
      },
  };
}

}  // namespace

SimResult simulate(caf::actor_system& system, const collectives::Schedule& schedule, simulator::Network& network,
                   const SimOptions& options, std::vector<msg::TensorPayload> inputs) {
  const auto begin = std::chrono::steady_clock::now();
  const int p = schedule.ranks;
  require(p == network.ranks(), "simulation: a schedule for {} ranks on a network of {}", p, network.ranks());
  if (options.fresh_network) network.reset();
  auto run = std::make_shared<Run>();
  run->schedule = &schedule;
  run->network = &network;
  run->options = options;
  if (options.carry_data) {
    require(inputs.size() == static_cast<std::size_t>(p), "simulation: {} inputs for {} ranks", inputs.size(), p);
    for (const auto& input : inputs) {
      require(input.size() == schedule.elements, "simulation: an input of {} floats, the schedule has {}",
              input.size(), schedule.elements);
    }
    run->inputs = std::move(inputs);
    run->outputs.resize(static_cast<std::size_t>(p));
    for (auto& spec : sync::shard_specs(schedule, options.bucket)) {
      run->shards.push_back(sync::spawn_shard(system, std::move(spec), run->router));
    }
  } else {
    run->inputs.assign(static_cast<std::size_t>(p), msg::TensorPayload::sized(schedule.elements));
    for (int r = 0; r < p; ++r) {
      const auto& steps = schedule.steps[static_cast<std::size_t>(r)];
      sync::ShardSpec spec;
      spec.bucket = options.bucket;
      spec.rank = r;
      spec.ranks = p;
      spec.elements = schedule.elements;
      spec.steps = steps;
      spec.send_view.assign(steps.size(), 1);
      spec.sizes_only = true;
      run->shards.push_back(sync::spawn_shard(system, std::move(spec), run->router));
    }
  }
  auto future = run->promise.get_future();
  auto self = system.spawn(driver, run);
  caf::anon_send(self, msg::ready_atom_v);
  SimResult result = future.get();
  result.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return result;
}

}  // namespace taihu::sim
