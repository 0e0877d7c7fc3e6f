// The real shard actors over the simulated network and clock
// (actors/sim/simulation.hpp): the data they carry still sums right, and
// their simulated times are the engine's and the cost model's.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "simulator/engine.hpp"
#include "actors/sim/simulation.hpp"
#include "collectives/sparse_allgather.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/cost_model.hpp"
#include "core/config/config.hpp"
#include "messages/type_ids.hpp"
#include "support/actor_fixture.hpp"

using namespace taihu;
using namespace taihu::sim;
using namespace taihu::simulator;
using namespace taihu::collectives;

namespace {

std::unique_ptr<Network> tree(int ranks, const char* placement) {
  const auto doc = config::Document::parse(std::string("[network]\ngroup_sizes = 2\nnode_bandwidth = 10e9\ntaper = 2\n"
                                                       "latency = 1e-6 4e-6\nreduce_rate = 5e9\nplacement = ") +
                                               placement + "\n",
                                           "test.ini");
  return Network::from_config(doc.section("network"), ranks);
}

// Integer-valued inputs: every summation order gives the exact sum.
std::vector<msg::TensorPayload> inputs(int p, std::size_t n) {
  std::vector<msg::TensorPayload> out;
  for (int r = 0; r < p; ++r) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((r * 5 + static_cast<int>(i) * 3) % 13) - 6;
    out.push_back(msg::TensorPayload::copy_of(v));
  }
  return out;
}

}  // namespace

TEST_SUITE("sim") {
  TEST_CASE_FIXTURE(testing::ActorFixture, "data mode: simulated shard actors sum right on odd rank counts") {
    for (int p : {3, 5, 7}) {
      for (const char* placement : {"block", "round_robin"}) {
        auto network = tree(p, placement);
        const std::size_t n = 101;
        for (Algorithm a : {Algorithm::ring, Algorithm::rabenseifner, Algorithm::topology_aware, Algorithm::hierarchical}) {
          CAPTURE(p);
          CAPTURE(name(a));
          const Schedule s = make_allreduce(a, network->topology(), n);
          auto in = inputs(p, n);
          std::vector<float> expected(n, 0.0f);
          for (const auto& x : in) {
            for (std::size_t i = 0; i < n; ++i) expected[i] += x[i];
          }
          SimOptions options;
          options.carry_data = true;
          const SimResult result = simulate(system, s, *network, options, in);
          REQUIRE(result.outputs.size() == static_cast<std::size_t>(p));
          for (const auto& out : result.outputs) CHECK(out.to_vector() == expected);
          // Every rank's link carried what the schedule says it sends and receives.
          for (int r = 0; r < p; ++r) {
            const std::string node = "node" + std::to_string(network->node_of(r));
            CHECK(network->usage(network->find_link(node + ".up")).bytes == 4.0 * static_cast<double>(s.elements_sent(r)));
            CHECK(network->usage(network->find_link(node + ".down")).bytes ==
                  4.0 * static_cast<double>(s.elements_received(r)));
          }
          // The actors' clock is the engine's alone.
          CHECK(result.seconds == time_without_actors(s, *network).seconds);
          CHECK(result.stats.messages == static_cast<std::uint64_t>([&] {
                  std::size_t m = 0;
                  for (int r = 0; r < p; ++r) m += s.messages_sent(r);
                  return m;
                }()));
        }
        // RedSync's allgather of packed messages: every rank ends with every block.
        const auto sizes = packed_sizes(p, 200, 0.05);
        const Schedule gather = sparse_allgather(sizes);
        std::vector<msg::TensorPayload> blocks;
        std::vector<float> expected;
        for (int r = 0; r < p; ++r) {
          std::vector<float> v(gather.elements, -1.0f);
          std::size_t offset = 0;
          for (int q = 0; q < r; ++q) offset += sizes[static_cast<std::size_t>(q)];
          for (std::size_t i = 0; i < sizes[static_cast<std::size_t>(r)]; ++i) v[offset + i] = static_cast<float>(r * 1000 + i);
          blocks.push_back(msg::TensorPayload::copy_of(v));
          for (std::size_t i = 0; i < sizes[static_cast<std::size_t>(r)]; ++i) expected.push_back(static_cast<float>(r * 1000 + i));
        }
        SimOptions options;
        options.carry_data = true;
        const SimResult result = simulate(system, gather, *network, options, blocks);
        for (const auto& out : result.outputs) CHECK(out.to_vector() == expected);
      }
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "sw26010 §7 example through the actors equals the cost model exactly") {
    const Topology topology(8, 4, Placement::block, Link{2e-6, 12e9}, Link{2e-6, 3e9}, 10e9);
    auto network = Network::from_topology(topology, Contention::none);
    const std::size_t n = 8 * 1024;
    for (Algorithm a : {Algorithm::ring, Algorithm::rabenseifner, Algorithm::topology_aware, Algorithm::hierarchical}) {
      CAPTURE(name(a));
      const Schedule s = make_allreduce(a, topology, n);
      const SimResult timing = simulate(system, s, *network, {});
      CHECK(timing.seconds == predict(s, topology).seconds);
      CHECK(timing.finish == predict(s, topology).finish);
      SimOptions data;
      data.carry_data = true;
      CHECK(simulate(system, s, *network, data, inputs(8, n)).seconds == timing.seconds);
    }
    CHECK(simulate(system, rabenseifner_allreduce(8, n), *network, {}).seconds ==
          doctest::Approx(rabenseifner_block_formula(topology, 4.0 * n)).epsilon(1e-12));
    CHECK(simulate(system, topology_aware_allreduce(topology, n), *network, {}).seconds ==
          doctest::Approx(topology_aware_formula(topology, 4.0 * n)).epsilon(1e-12));
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "timing mode: 64 ranks of 100 MB, sizes only, contention on") {
    auto network = tree(64, "block");
    for (Algorithm a : {Algorithm::ring, Algorithm::topology_aware}) {
      const Schedule s = make_allreduce(a, network->topology(), 25'000'000);
      const SimResult result = simulate(system, s, *network, {});
      CHECK(result.seconds == time_without_actors(s, *network).seconds);
      CHECK(result.seconds > 0);
    }
  }
}
