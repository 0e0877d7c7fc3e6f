// Collectives run by shard actors (actors/sync/shard_actor.hpp) on a real
// actor system: results must equal the plain sum exactly (integer-valued
// inputs), be bit-identical on all ranks, and equal the reference executor's
// bits for the same schedule.

#include <doctest/doctest.h>

#include <chrono>
#include <numeric>
#include <string>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/reference_executor.hpp"
#include "actors/sync/shard_actor.hpp"
#include "support/shard_wiring.hpp"
#include "support/actor_fixture.hpp"
#include "support/collective_inputs.hpp"

#include <caf/scheduler/test_coordinator.hpp>

#include <memory>
#include <random>

using namespace taihu;
using namespace taihu::sync;
using namespace taihu::collectives;
using namespace taihu::testing;

namespace {

// P shard actors of one bucket, wired to a scoped actor as their owner.
struct ShardGroup {
  caf::actor_system& system;
  Schedule schedule;
  std::uint32_t bucket;
  caf::scoped_actor owner{system};
  std::vector<caf::actor> shards;

  ShardGroup(caf::actor_system& sys, Schedule s, SendMode mode = SendMode::view_where_safe, std::uint32_t b = 7)
      : system(sys), schedule(std::move(s)), bucket(b) {
    for (auto& spec : shard_specs(schedule, bucket, mode)) shards.push_back(caf::actor_cast<caf::actor>(spawn_shard(system, std::move(spec))));
    for (auto& shard : shards) owner->send(shard, testing::shard_init(bucket, shards, owner));
  }
  ~ShardGroup() {
    for (auto& shard : shards) owner->send_exit(shard, caf::exit_reason::user_shutdown);
  }

  void start(std::uint64_t iteration, const Buffers& inputs) {
    for (std::size_t r = 0; r < shards.size(); ++r) {
      owner->send(shards[r], msg::GradientReady{bucket, iteration, msg::TensorPayload::copy_of(inputs[r])});
    }
  }

  // Waits for every rank's Reduced of `iteration`; returns the buffers by rank.
  Buffers collect(std::uint64_t iteration) {
    Buffers out(shards.size());
    std::size_t got = 0;
    bool timed_out = false;
    owner->receive_while([&] { return got < shards.size() && !timed_out; })(
        [&](msg::Reduced& r) {
          REQUIRE(r.bucket == bucket);
          REQUIRE(r.iteration == iteration);
          out[static_cast<std::size_t>(r.rank)] = r.buffer.to_vector();
          ++got;
        },
        caf::after(std::chrono::seconds(10)) >> [&] { timed_out = true; });
    REQUIRE_MESSAGE(!timed_out, "only ", got, " of ", shards.size(), " ranks finished");
    return out;
  }

  struct Stats {
    std::uint64_t chunks_sent = 0, early_chunks = 0, buffer_copies = 0, copied_floats = 0;
  };
  Stats stats(int r) {
    Stats result;
    owner->request(shards[static_cast<std::size_t>(r)], std::chrono::seconds(5), msg::stats_atom_v)
        .receive([&](const msg::ShardStats& s) { result = {s.chunks_sent, s.early_chunks, s.buffer_copies,
                                                          s.copied_floats}; },
                 [&](caf::error& e) { FAIL(owner->system().render(e)); });
    return result;
  }
};

// Two iterations back to back (the second starts before the first is
// collected, so chunks of iteration 1 can overtake iteration 0's).
void check_allreduce(caf::actor_system& system, Algorithm a, int p, std::size_t n, SendMode mode) {
  CAPTURE(name(a));
  CAPTURE(p);
  CAPTURE(n);
  CAPTURE(static_cast<int>(mode));
  ShardGroup group(system, make_allreduce(a, test_topology(p), n), mode);
  const Buffers inputs[] = {integer_inputs(p, n, 0), integer_inputs(p, n, 5)};
  group.start(0, inputs[0]);
  group.start(1, inputs[1]);
  for (std::uint64_t it = 0; it < 2; ++it) {
    const auto results = group.collect(it);
    std::vector<float> sum(n, 0.0f);
    for (const auto& b : inputs[it]) {
      for (std::size_t i = 0; i < n; ++i) sum[i] += b[i];
    }
    auto reference = inputs[it];
    execute(group.schedule, reference, 3);
    for (int r = 0; r < p; ++r) {
      REQUIRE(results[static_cast<std::size_t>(r)] == sum);
      REQUIRE(same_bits(results[static_cast<std::size_t>(r)], results[0]));
      REQUIRE(same_bits(results[static_cast<std::size_t>(r)], reference[0]));
    }
  }
  std::uint64_t sent = 0, expected = 0, copied = 0, expected_copied = 0;
  for (int r = 0; r < p; ++r) {
    const auto stats = group.stats(r);
    sent += stats.chunks_sent;
    copied += stats.copied_floats;
    CHECK(stats.buffer_copies == 0);  // the buffers were handed over, so reduced in place
    expected += group.schedule.messages_sent(r);
    expected_copied += group.schedule.elements_sent(r);
  }
  CHECK(sent == 2 * expected);
  // Every generated schedule passes the zero-copy analysis: no send copies.
  CHECK(copied == (mode == SendMode::copy ? 2 * expected_copied : 0));
}

// The deterministic `testing` scheduler (CAF reference §11): nothing runs
// until the test runs a job, so the test picks the order.
struct InterleavingConfig : caf::actor_system_config {
  InterleavingConfig() {
    add_message_types<caf::id_block::taihu>();
    set("scheduler.policy", caf::atom("testing"));
  }
};

struct Collected {
  std::vector<msg::Reduced> reduced;
};

// Runs `iterations` back-to-back allreduces with actor steps in an order
// drawn from `seed` (one message per job); returns the early-chunk count.
std::uint64_t run_interleaved(const Schedule& schedule, int iterations, std::uint64_t seed) {
  InterleavingConfig config;
  caf::actor_system system{config};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler());
  auto collected = std::make_shared<Collected>();
  auto owner = system.spawn([collected]() -> caf::behavior {
    return {[collected](msg::Reduced& r) { collected->reduced.push_back(std::move(r)); }};
  });
  std::vector<caf::actor> shards;
  for (auto& spec : shard_specs(schedule, 0)) shards.push_back(caf::actor_cast<caf::actor>(spawn_shard(system, std::move(spec))));
  const int p = schedule.ranks;
  const auto n = schedule.elements;
  std::vector<Buffers> inputs;
  for (int it = 0; it < iterations; ++it) inputs.push_back(integer_inputs(p, n, it));
  // GradientReady before ShardInit on some ranks: it must wait for the wiring.
  for (int it = 0; it < iterations; ++it) {
    for (int r = 0; r < p; ++r) {
      caf::anon_send(shards[static_cast<std::size_t>(r)],
                     msg::GradientReady{0, static_cast<std::uint64_t>(it),
                                        msg::TensorPayload::copy_of(inputs[static_cast<std::size_t>(it)][static_cast<std::size_t>(r)])});
    }
  }
  for (auto& shard : shards) caf::anon_send(shard, testing::shard_init(0, shards, owner));
  std::mt19937_64 rng(seed);
  while (!sched.jobs.empty()) {
    std::swap(sched.jobs.front(), sched.jobs[std::uniform_int_distribution<std::size_t>(0, sched.jobs.size() - 1)(rng)]);
    sched.run_once();
  }
  REQUIRE(collected->reduced.size() == static_cast<std::size_t>(p * iterations));
  for (const auto& r : collected->reduced) {
    std::vector<float> sum(n, 0.0f);
    for (const auto& b : inputs[r.iteration]) {
      for (std::size_t i = 0; i < n; ++i) sum[i] += b[i];
    }
    REQUIRE(r.buffer.to_vector() == sum);
  }
  std::uint64_t early = 0;
  for (auto& shard : shards) {
    caf::scoped_actor self{system};
    auto request = self->request(shard, caf::infinite, msg::stats_atom_v);
    sched.run();
    request.receive([&](const msg::ShardStats& s) { early += s.early_chunks; },
                    [&](caf::error& e) { FAIL(system.render(e)); });
  }
  for (auto& shard : shards) caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
  sched.run();
  return early;
}

}  // namespace

TEST_SUITE("shard actors") {
  TEST_CASE("random interleavings under the testing scheduler give the exact sum") {
    std::uint64_t early = 0;
    for (Algorithm a : allreduce_algorithms) {
      for (int p : {2, 3, 5, 8}) {
        for (std::uint64_t seed = 0; seed < 5; ++seed) {
          CAPTURE(name(a));
          CAPTURE(p);
          CAPTURE(seed);
          early += run_interleaved(make_allreduce(a, test_topology(p), 37), 3, seed);
        }
      }
    }
    CHECK(early > 0);  // the orders did deliver chunks before their step
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "allreduce equals the plain sum on every rank, two iterations") {
    for (Algorithm a : allreduce_algorithms) {
      for (int p = 1; p <= 9; ++p) {
        const std::size_t sizes[] = {1, static_cast<std::size_t>(p - 1), static_cast<std::size_t>(p + 1), 1000, 100003};
        for (std::size_t n : sizes) {
          check_allreduce(system, a, p, n, SendMode::view_where_safe);
          check_allreduce(system, a, p, n, SendMode::copy);
        }
      }
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "allreduce with random floats is bit-identical to the reference executor") {
    const int p = 6;
    const std::size_t n = 5003;
    for (Algorithm a : allreduce_algorithms) {
      CAPTURE(name(a));
      ShardGroup group(system, make_allreduce(a, test_topology(p), n));
      Buffers inputs(p, std::vector<float>(n));
      std::uint32_t state = 12345;
      for (auto& b : inputs) {
        for (auto& x : b) {
          state = state * 1664525u + 1013904223u;
          x = static_cast<float>(static_cast<std::int32_t>(state >> 8)) * 1e-5f;
        }
      }
      group.start(4, inputs);
      const auto results = group.collect(4);
      auto reference = inputs;
      execute(group.schedule, reference, 99);
      for (int r = 0; r < p; ++r) REQUIRE(same_bits(results[static_cast<std::size_t>(r)], reference[0]));
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "broadcast copies the root's buffer to every rank") {
    for (int p = 1; p <= 9; ++p) {
      for (std::size_t n : {std::size_t{1}, static_cast<std::size_t>(p + 1), std::size_t{1000}}) {
        for (int root : {0, p - 1, p / 2}) {
          for (Algorithm a : {Algorithm::binomial, Algorithm::scatter_allgather}) {
            CAPTURE(p);
            CAPTURE(n);
            CAPTURE(root);
            CAPTURE(name(a));
            ShardGroup group(system, make_broadcast(a, p, n, root));
            const auto inputs = integer_inputs(p, n, 1);
            group.start(0, inputs);
            const auto results = group.collect(0);
            for (const auto& result : results) REQUIRE(result == inputs[static_cast<std::size_t>(root)]);
          }
        }
      }
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "allgatherv concatenates the blocks in rank order") {
    for (int p = 1; p <= 9; ++p) {
      CAPTURE(p);
      std::vector<std::size_t> counts(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>((r * 5) % 7);
      const auto n = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
      ShardGroup group(system, ring_allgatherv(counts));
      // Rank r holds its block at its offset and -1 elsewhere.
      Buffers inputs(p, std::vector<float>(n, -1.0f));
      std::vector<float> expected(n);
      std::size_t offset = 0;
      for (int r = 0; r < p; ++r) {
        for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) {
          expected[offset + i] = static_cast<float>(r * 100 + static_cast<int>(i));
          inputs[static_cast<std::size_t>(r)][offset + i] = expected[offset + i];
        }
        offset += counts[static_cast<std::size_t>(r)];
      }
      group.start(0, inputs);
      for (const auto& result : group.collect(0)) REQUIRE(result == expected);
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "a shared input buffer is copied, never written under its owner") {
    ShardGroup group(system, make_allreduce(Algorithm::ring, test_topology(3), 10));
    const auto inputs = integer_inputs(3, 10, 0);
    std::vector<msg::TensorPayload> kept;
    for (std::size_t r = 0; r < 3; ++r) {
      kept.push_back(msg::TensorPayload::copy_of(inputs[r]));
      group.owner->send(group.shards[r], msg::GradientReady{group.bucket, 0, kept.back()});  // still shared
    }
    group.collect(0);
    for (std::size_t r = 0; r < 3; ++r) CHECK(kept[r].to_vector() == inputs[r]);
    CHECK(group.stats(0).buffer_copies == 1);
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "sends the zero-copy analysis flags are copied, so sums stay right") {
    // Rank 0 sends [0,4) and then receives into it: a view could be
    // overwritten before rank 1 reads it (see the collectives suite).
    Schedule s(Collective::allreduce, Algorithm::ring, 2, 4);
    s.add(0, Step::send_only(1, {0, 4}));
    s.add(0, Step::receive_only(1, {0, 4}, Combine::copy));
    s.add(1, Step::send_only(0, {0, 4}));
    s.add(1, Step::receive_only(0, {0, 4}, Combine::reduce));
    s.finalize();
    const auto specs = shard_specs(s, 0);
    CHECK(specs[0].send_view == std::vector<std::uint8_t>{0, 1});
    CHECK(specs[1].send_view == std::vector<std::uint8_t>{0, 1});
    for (int trial = 0; trial < 20; ++trial) {
      ShardGroup group(system, s);
      group.start(0, Buffers{std::vector<float>(4, 1.0f), std::vector<float>(4, 2.0f)});
      const auto results = group.collect(0);
      REQUIRE(results[1] == std::vector<float>(4, 3.0f));
      REQUIRE(results[0] == std::vector<float>(4, 2.0f));  // rank 0 copied rank 1's input
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "a wrong-sized gradient stops the shard with an error") {
    ShardGroup group(system, make_allreduce(Algorithm::ring, test_topology(2), 10));
    group.owner->monitor(group.shards[1]);
    group.owner->send(group.shards[1], msg::GradientReady{group.bucket, 0, msg::TensorPayload::copy_of(std::vector<float>(9))});
    bool down = false;
    std::string reason;
    group.owner->receive(
        [&](const caf::down_msg& m) {
          down = m.source == group.shards[1] && m.reason;
          reason = system.render(m.reason);
        },
        caf::after(std::chrono::seconds(5)) >> [] {});
    CHECK(down);
    CHECK_MESSAGE(reason.find("shard 7/1: gradients of bucket 7 with 9 floats, expected 10") != std::string::npos,
                  reason);
  }
}
