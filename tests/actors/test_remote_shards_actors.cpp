// Shard actors split over two "nodes" joined by the data plane (ChunkLink as
// the shard's ChunkRouter): the collectives run unchanged, give the
// reference executor's bits on every rank, and exactly the chunks between
// ranks on different nodes cross the data plane (here through same-host
// channels, which waiting shards poll).

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "actors/chunk_link/chunk_link.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/reference_executor.hpp"
#include "actors/sync/shard_actor.hpp"
#include "support/actor_fixture.hpp"
#include "support/two_nodes.hpp"

using namespace taihu;
using namespace taihu::sync;
using namespace taihu::collectives;

namespace {

using Buffers = std::vector<std::vector<float>>;

Buffers random_inputs(int p, std::size_t n) {
  Buffers b(static_cast<std::size_t>(p), std::vector<float>(n));
  std::uint32_t x = 12345;
  for (auto& v : b)
    for (auto& f : v) {
      x = x * 1664525u + 1013904223u;
      f = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;  // not exactly summable
    }
  return b;
}

// Bytes of the schedule's messages whose sender and receiver sit on different nodes.
std::uint64_t cross_node_bytes(const Schedule& s, const std::vector<int>& rank_node) {
  std::uint64_t bytes = 0;
  for (int r = 0; r < s.ranks; ++r)
    for (const Step& step : s.steps[static_cast<std::size_t>(r)])
      if (step.sends() && rank_node[static_cast<std::size_t>(r)] != rank_node[static_cast<std::size_t>(step.send_to)])
        bytes += step.send.length * sizeof(float);
  return bytes;
}

}  // namespace

TEST_SUITE("net") {
  TEST_CASE_FIXTURE(testing::ActorFixture, "allreduce by shard actors on two nodes joined by the data plane") {
    const int p = 4;
    const std::vector<int> rank_node{0, 1, 0, 1};  // interleaved: most messages cross
    const Topology topology(p, 2, Placement::block, Link{1e-6, 12e9}, Link{2e-6, 3e9}, 10e9);
    std::uint64_t polled = 0;  // chunks a waiting shard took from the same-host channel itself
    for (Algorithm a : {Algorithm::ring, Algorithm::rabenseifner, Algorithm::hierarchical, Algorithm::direct}) {
      for (std::size_t n : {std::size_t{1}, std::size_t{1001}, std::size_t{70000}}) {
        CAPTURE(name(a));
        CAPTURE(n);
        const Schedule schedule = make_allreduce(a, topology, n);
        const Buffers inputs = random_inputs(p, n);
        Buffers expected = inputs;
        execute(schedule, expected, 1);

        auto links = testing::two_linked_nodes(rank_node, 4096);  // multi-frame chunks

        caf::scoped_actor owner{system};
        std::vector<caf::actor> shards;
        for (auto& spec : shard_specs(schedule, 3)) {
          const int r = spec.rank;
          auto& link = links[static_cast<std::size_t>(rank_node[static_cast<std::size_t>(r)])];
          shards.push_back(caf::actor_cast<caf::actor>(spawn_shard(system, std::move(spec), link)));
          link->attach(3, r, caf::actor_cast<sync::shard_actor>(shards.back()));
        }
        testing::wire_across_nodes(owner, 3, shards, rank_node);
        for (std::uint64_t it = 0; it < 2; ++it) {
          for (int r = 0; r < p; ++r)
            owner->send(shards[static_cast<std::size_t>(r)],
                        msg::GradientReady{3, it, msg::TensorPayload::copy_of(inputs[static_cast<std::size_t>(r)])});
          Buffers out(static_cast<std::size_t>(p));
          int got = 0;
          bool timed_out = false;
          owner->receive_while([&] { return got < p && !timed_out; })(
              [&](msg::Reduced& r) {
                REQUIRE(r.iteration == it);
                out[static_cast<std::size_t>(r.rank)] = r.buffer.to_vector();
                ++got;
              },
              caf::after(std::chrono::seconds(10)) >> [&] { timed_out = true; });
          REQUIRE_MESSAGE(!timed_out, "only ", got, " of ", p, " ranks finished");
          for (int r = 0; r < p; ++r) {
            CAPTURE(r);
            CHECK(std::memcmp(out[static_cast<std::size_t>(r)].data(), expected[static_cast<std::size_t>(r)].data(),
                              n * sizeof(float)) == 0);
          }
        }
        const std::uint64_t crossing = 2 * cross_node_bytes(schedule, rank_node);
        // The sender counts a write when its completion runs, maybe just after the receiver consumed it.
        auto sent = [&] { return links[0]->plane().stats().bytes_sent + links[1]->plane().stats().bytes_sent; };
        for (int i = 0; i < 200 && sent() != crossing; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        CHECK(sent() == crossing);
        CHECK(links[0]->plane().stats().bytes_received + links[1]->plane().stats().bytes_received == crossing);
        // The large chunks stayed in the sender's memory until their step read them in place.
        if (n == 70000)
          CHECK(links[0]->plane().stats().messages_read_remotely + links[1]->plane().stats().messages_read_remotely > 0);
        polled += links[0]->plane().stats().messages_polled + links[1]->plane().stats().messages_polled;
        for (auto& s : shards) owner->send_exit(s, caf::exit_reason::user_shutdown);
        for (auto& s : shards) owner->wait_for(s);
        for (auto& l : links) l->detach_all();
      }
    }
    CHECK(polled > 0);
  }
}
