// In-process allreduce by shard actors (actors/sync/shard_actor.hpp): time per
// collective and algorithm bandwidth (bucket bytes / time) for each algorithm,
// next to this machine's memcpy bandwidth; and the per-hop cost of a Chunk
// message between two actors.
//
//   bench_shard_actors [--ranks=4,8] [--mb=1,16,100] [--runs=N] [--threads=N]

#include <fmt/format.h>

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "collectives/algorithms.hpp"
#include "actors/sync/shard_actor.hpp"
#include "messages/type_ids.hpp"

using namespace taihu;
using namespace taihu::sync;
using namespace taihu::collectives;
using Clock = std::chrono::steady_clock;

namespace {

using taihu::bench::arg_value;
using taihu::bench::number_list;


double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double memcpy_gbs(std::size_t bytes, int runs) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::memcpy(b.data(), a.data(), bytes);
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto t = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, seconds_since(t));
  }
  return static_cast<double>(bytes) / best / 1e9;
}

// Best time of `runs` allreduces (after one warm-up) on fresh shard actors.
double allreduce_seconds(caf::actor_system& system, const Schedule& schedule, SendMode mode, int runs) {
  caf::scoped_actor owner{system};
  std::vector<shard_actor> shards;
  for (auto& spec : shard_specs(schedule, 0, mode)) shards.push_back(spawn_shard(system, std::move(spec)));
  // The owner is this thread's scoped actor, untyped: it receives Reduced by hand.
  for (auto& s : shards) owner->send(s, msg::ShardInit{0, as_peers(shards), caf::actor_cast<msg::reduced_receiver>(owner)});
  std::vector<msg::TensorPayload> buffers;
  for (int r = 0; r < schedule.ranks; ++r) {
    std::vector<float> v(schedule.elements, 1e-3f * static_cast<float>(r + 1));
    buffers.push_back(msg::TensorPayload::copy_of(v));
  }
  double best = 1e30;
  for (int it = 0; it <= runs; ++it) {
    const auto t = Clock::now();
    for (std::size_t r = 0; r < shards.size(); ++r) {
      owner->send(shards[r], msg::GradientReady{0, static_cast<std::uint64_t>(it), std::move(buffers[r])});
    }
    for (std::size_t got = 0; got < shards.size(); ++got) {
      owner->receive([&](msg::Reduced& m) { buffers[static_cast<std::size_t>(m.rank)] = std::move(m.buffer); });
    }
    if (it > 0) best = std::min(best, seconds_since(t));
  }
  for (auto& s : shards) owner->send_exit(s, caf::exit_reason::user_shutdown);
  return best;
}

// One-way cost of a Chunk with `floats` floats between two event-based
// actors that bounce it `hops` times in all.
double hop_microseconds(caf::actor_system& system, std::size_t floats, int hops) {
  auto bouncer = [](caf::event_based_actor* self) -> caf::behavior {
    return {[=](msg::Chunk& c, caf::actor other, caf::actor done) {
      if (c.seq == 0) {
        self->send(done, std::move(c));
        return;
      }
      --c.seq;
      self->send(other, std::move(c), caf::actor_cast<caf::actor>(self), done);
    }};
  };
  auto a = system.spawn(bouncer);
  auto b = system.spawn(bouncer);
  caf::scoped_actor self{system};
  msg::Chunk chunk{0, 0, 0, static_cast<std::uint32_t>(hops), 0,
                   msg::TensorPayload::copy_of(std::vector<float>(floats, 1.0f)), nullptr};
  const auto t = Clock::now();
  self->send(a, std::move(chunk), b, caf::actor{self});
  self->receive([&](msg::Chunk&) {});
  const double s = seconds_since(t);
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(b, caf::exit_reason::user_shutdown);
  return s / hops * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const auto ranks = number_list(arg_value(argc, argv, "ranks", "4,8"));
  const auto mbs = number_list(arg_value(argc, argv, "mb", "1,16,100"));
  const int runs = std::stoi(arg_value(argc, argv, "runs", "5"));
  const int threads = std::stoi(arg_value(argc, argv, "threads", "2"));

  caf::actor_system_config config;
  config.add_message_types<caf::id_block::taihu>();
  config.set("scheduler.max-threads", threads);
  caf::actor_system system{config};

  fmt::print("scheduler threads: {}\n", threads);
  for (std::size_t floats : {std::size_t{1}, std::size_t{1} << 18}) {
    const double us = hop_microseconds(system, floats, 100000);
    fmt::print("Chunk hop between two actors, {} floats: {:.3f} us ({:.2f} M msg/s)\n", floats, us, 1.0 / us);
  }
  fmt::print("{:>5} {:>6} {:>15} {:>6} {:>10} {:>10} {:>12}\n", "ranks", "MB", "algorithm", "sends", "ms",
             "algbw GB/s", "memcpy GB/s");
  const Algorithm algorithms[] = {Algorithm::ring, Algorithm::rabenseifner, Algorithm::topology_aware,
                                  Algorithm::hierarchical};
  for (double mb : mbs) {
    const auto elements = static_cast<std::size_t>(mb * 1e6 / sizeof(float));
    const double copy = memcpy_gbs(elements * sizeof(float), runs);
    for (double p : ranks) {
      const int pi = static_cast<int>(p);
      const Topology topology(pi, std::max(1, pi / 2), Placement::block, Link{}, Link{}, 0.0);
      for (Algorithm a : algorithms) {
        const auto schedule = make_allreduce(a, topology, elements);
        for (SendMode mode : {SendMode::view_where_safe, SendMode::copy}) {
          const double s = allreduce_seconds(system, schedule, mode, runs);
          fmt::print("{:>5} {:>6} {:>15} {:>6} {:>10.2f} {:>10.2f} {:>12.2f}\n", pi, mb, name(a),
                     mode == SendMode::copy ? "copy" : "view", s * 1e3,
                     static_cast<double>(elements * sizeof(float)) / s / 1e9, copy);
        }
      }
    }
  }
}
