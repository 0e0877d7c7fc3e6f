#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/reference_executor.hpp"
#include "collectives/schedule.hpp"
#include "collectives/topology.hpp"
#include "collectives/zero_copy.hpp"
#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "tests/support/collective_inputs.hpp"

using namespace taihu;
using namespace taihu::collectives;

namespace {

using Buffers = std::vector<std::vector<float>>;

using testing::allreduce_algorithms;
using testing::plain_sum;
using testing::test_topology;

// Small integers: every partial sum is exact in float, so any summation
// order must give exactly the plain sum.
Buffers integer_inputs(int p, std::size_t n) {
  Buffers b(static_cast<std::size_t>(p), std::vector<float>(n));
  for (int r = 0; r < p; ++r) {
    for (std::size_t i = 0; i < n; ++i) b[static_cast<std::size_t>(r)][i] = static_cast<float>((r * 7 + i * 3) % 11) - 5;
  }
  return b;
}

Buffers random_inputs(int p, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Buffers b(static_cast<std::size_t>(p), std::vector<float>(n));
  for (auto& buffer : b) {
    for (auto& x : buffer) x = normal(rng) * 100.0f;
  }
  return b;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}


// The sums each algorithm promises (algorithms.hpp), recomputed on whole
// vectors: the allreduce's output must have exactly these bits.
std::vector<float> add(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

std::vector<float> butterfly(Buffers y) {
  const auto m = y.size();
  const auto core = std::bit_floor(m);
  for (auto e = core; e < m; ++e) y[e - core] = add(y[e - core], y[e]);
  for (auto d = core / 2; d >= 1; d /= 2) {
    Buffers next = y;
    for (std::size_t l = 0; l < core; ++l) next[l] = add(y[l], y[l ^ d]);
    y = std::move(next);
  }
  return y[0];
}

std::vector<float> binomial_sum(const Buffers& x, std::size_t v) {
  const auto m = x.size();
  const auto low = v == 0 ? std::bit_ceil(m) : (v & (~v + 1));
  auto s = x[v];
  for (std::size_t mask = 1; mask < low && v + mask < m; mask *= 2) s = add(s, binomial_sum(x, v + mask));
  return s;
}

// Chunk c of the bucket (schedule.hpp's split) summed from rank c on, adding
// rank c + step, c + 2 step, ... (mod p) in that order.
std::vector<float> chunk_sums(const Buffers& x, int p, int step) {
  const std::size_t n = x[0].size();
  std::vector<float> out(n);
  for (int c = 0; c < p; ++c) {
    const Range range = chunk(n, p, c);
    for (std::size_t i = range.offset; i < range.end(); ++i) {
      float s = x[static_cast<std::size_t>(c)][i];
      for (int k = 1; k < p; ++k) s += x[static_cast<std::size_t>(((c + step * k) % p + p) % p)][i];
      out[i] = s;
    }
  }
  return out;
}

std::vector<float> promised_sum(Algorithm a, const Topology& t, const Buffers& x) {
  const int p = t.ranks();
  auto pick = [&](const std::vector<int>& ranks) {
    Buffers out;
    for (int r : ranks) out.push_back(x[static_cast<std::size_t>(r)]);
    return out;
  };
  switch (a) {
    // Chunk c starts from rank c's values; the ring adds the ranks after c,
    // direct the ranks before it, each one at a time.
    case Algorithm::ring:
    case Algorithm::pipelined_ring: return chunk_sums(x, p, +1);
    case Algorithm::direct: return chunk_sums(x, p, -1);
    case Algorithm::rabenseifner: return butterfly(x);
    case Algorithm::topology_aware: return butterfly(pick(round_robin_order(t)));
    case Algorithm::hierarchical: {
      Buffers leaders;
      for (int g = 0; g < t.groups(); ++g) leaders.push_back(binomial_sum(pick(t.members(g)), 0));
      return butterfly(leaders);
    }
    case Algorithm::reduce_broadcast: return binomial_sum(x, 0);
    case Algorithm::binomial:
    case Algorithm::scatter_allgather: break;
  }
  return {};
}

// Runs the allreduce and checks: exact plain sum on integer data; on random
// data every rank bit-identical to the promised summation order under two
// different arrival orders, and close to a double-precision sum.
void check_allreduce(Algorithm a, int p, std::size_t n) {
  CAPTURE(name(a));
  CAPTURE(p);
  CAPTURE(n);
  const auto schedule = make_allreduce(a, test_topology(p), n);

  auto ints = integer_inputs(p, n);
  const auto expected = plain_sum(ints);
  execute(schedule, ints, 1);
  for (int r = 0; r < p; ++r) REQUIRE(ints[static_cast<std::size_t>(r)] == expected);

  const auto inputs = random_inputs(p, n, 42);
  auto first = inputs, second = inputs;
  execute(schedule, first, 7);
  execute(schedule, second, 12345);
  std::vector<double> sum(n, 0.0);
  for (const auto& b : inputs) {
    for (std::size_t i = 0; i < n; ++i) sum[i] += b[i];
  }
  const auto promised = promised_sum(a, test_topology(p), inputs);
  for (int r = 0; r < p; ++r) {
    REQUIRE(same_bits(first[static_cast<std::size_t>(r)], promised));
    REQUIRE(same_bits(second[static_cast<std::size_t>(r)], promised));
  }
  for (std::size_t i = 0; i < n; ++i) REQUIRE(first[0][i] == doctest::Approx(sum[i]).epsilon(1e-4));
}

}  // namespace

TEST_SUITE("collectives") {
  TEST_CASE("chunk splits n into balanced contiguous pieces, also when n < parts") {
    for (std::size_t n : {0u, 1u, 2u, 7u, 8u, 9u, 1000u}) {
      for (int parts = 1; parts <= 9; ++parts) {
        std::size_t offset = 0;
        for (int i = 0; i < parts; ++i) {
          const Range c = chunk(n, parts, i);
          CHECK(c.offset == offset);
          CHECK((c.length == n / parts || c.length == n / parts + 1));
          offset = c.end();
        }
        CHECK(offset == n);
      }
    }
    CHECK(chunk(10, 4, 1) == Range{3, 3});
    CHECK(chunk(10, 4, 3) == Range{8, 2});
  }

  TEST_CASE("every allreduce equals the plain sum, bit-identical on all ranks, for P = 1..9") {
    for (int p = 1; p <= 9; ++p) {
      for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t(p - 1), std::size_t(p),
                            std::size_t(p + 1), std::size_t{1000}}) {
        for (auto a : allreduce_algorithms) check_allreduce(a, p, n);
      }
    }
  }

  TEST_CASE("allreduce of 1000003 elements (not divisible by P)") {
    for (int p : {3, 8}) {
      for (auto a : allreduce_algorithms) {
        CAPTURE(name(a));
        const auto schedule = make_allreduce(a, test_topology(p), 1000003);
        auto ints = integer_inputs(p, 1000003);
        const auto expected = plain_sum(ints);
        execute(schedule, ints, 3);
        for (const auto& b : ints) REQUIRE(b == expected);
      }
    }
  }

  TEST_CASE("hierarchical and topology-aware allreduce on uneven groups and both placements") {
    for (auto placement : {Placement::block, Placement::round_robin}) {
      for (int group : {1, 3, 4}) {
        const Topology t(7, group, placement, Link{}, Link{}, 0);
        for (auto a : {Algorithm::topology_aware, Algorithm::hierarchical}) {
          auto b = integer_inputs(7, 50);
          const auto expected = plain_sum(b);
          execute(make_allreduce(a, t, 50), b, 5);
          for (const auto& x : b) CHECK(x == expected);
        }
      }
    }
    // Groups given rank by rank (as a random draw of nodes gives them): uneven,
    // not contiguous, ids renumbered in order of first appearance.
    const Topology drawn(std::vector<int>{40, 7, 40, 3, 7, 40, 12}, 4, Placement::random, Link{}, Link{}, 0);
    CHECK(drawn.groups() == 4);
    CHECK(drawn.group_of(0) == 0);
    CHECK(drawn.group_of(1) == 1);
    CHECK(drawn.members(0) == std::vector<int>{0, 2, 5});
    CHECK(drawn.same_group(1, 4));
    CHECK(!drawn.same_group(3, 6));
    CHECK_THROWS_AS(Topology(std::vector<int>{1, 1, 1}, 2, Placement::random, Link{}, Link{}, 0), Error);
    for (auto a : allreduce_algorithms) {
      CAPTURE(name(a));
      auto b = integer_inputs(7, 50);
      const auto expected = plain_sum(b);
      execute(make_allreduce(a, drawn, 50), b, 5);
      for (const auto& x : b) CHECK(x == expected);
    }
  }

  TEST_CASE("segmented schedules bound message sizes and keep the bits") {
    for (int p : {3, 6, 8}) {
      for (auto a : allreduce_algorithms) {
        CAPTURE(p);
        CAPTURE(name(a));
        const auto whole = make_allreduce(a, test_topology(p), 1001);
        const auto pieces = segment(whole, 64);
        for (int r = 0; r < p; ++r) {
          CHECK(pieces.elements_sent(r) == whole.elements_sent(r));
          for (const auto& step : pieces.steps[static_cast<std::size_t>(r)]) {
            CHECK(step.send.length <= 64);
            CHECK(step.recv.length <= 64);
          }
        }
        const auto inputs = random_inputs(p, 1001, 8);
        auto x = inputs, y = inputs;
        execute(whole, x, 1);
        execute(pieces, y, 2);
        for (int r = 0; r < p; ++r) CHECK(same_bits(y[static_cast<std::size_t>(r)], x[0]));
      }
    }
    CHECK_THROWS_AS(segment(ring_allreduce(2, 10), 0), Error);
  }

  TEST_CASE("pipelined ring: segments pass on as they come, with the ring's bytes and bits, for P = 1..9") {
    for (int p = 1; p <= 9; ++p) {
      for (std::size_t n : {std::size_t{1}, std::size_t(p + 1), std::size_t{1000}}) {
        for (std::size_t segment : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
          CAPTURE(p);
          CAPTURE(n);
          CAPTURE(segment);
          const auto ring = ring_allreduce(p, n);
          const auto pipelined = pipelined_ring_allreduce(p, n, segment);
          for (int r = 0; r < p; ++r) {
            CHECK(pipelined.elements_sent(r) == ring.elements_sent(r));
            CHECK(pipelined.elements_received(r) == ring.elements_received(r));
            for (const auto& step : pipelined.steps[static_cast<std::size_t>(r)]) {
              // No step both sends and receives: a segment goes on after it was combined.
              CHECK(!(step.sends() && step.receives()));
              CHECK(step.send.length <= std::max<std::size_t>(segment, (n / p + 1) / max_pipeline_segments + 1));
            }
          }
          auto ints = integer_inputs(p, n);
          const auto expected = plain_sum(ints);
          execute(pipelined, ints, 5);
          for (const auto& b : ints) REQUIRE(b == expected);
          const auto inputs = random_inputs(p, n, 17);
          auto x = inputs, y = inputs;
          execute(ring, x, 3);
          const auto run = execute(pipelined, y, 99);
          for (int r = 0; r < p; ++r) REQUIRE(same_bits(y[static_cast<std::size_t>(r)], x[0]));
          if (p >= 3 && n == 1000 && segment == 7) CHECK(run.early > 0);  // segments overtake steps
        }
      }
    }
    // At most max_pipeline_segments per range, whatever the segment size asked for.
    const auto capped = pipelined_ring_allreduce(2, 100000, 1);
    CHECK(capped.messages_sent(0) == 2 * max_pipeline_segments);
    // The default cuts 1 MiB segments: a 100 MB bucket over 4 ranks goes in 24 per range.
    const auto big = make_allreduce(Algorithm::pipelined_ring, test_topology(4), 25'000'000);
    CHECK(big.messages_sent(0) == 6 * 24);
    CHECK(parse_algorithm("pipelined_ring") == Algorithm::pipelined_ring);
  }

  TEST_CASE("the shuffled executor really delivers messages out of order") {
    auto b = random_inputs(8, 1000, 1);
    std::size_t early = 0;
    for (auto a : allreduce_algorithms) early += execute(make_allreduce(a, test_topology(8), 1000), b, 11).early;
    CHECK(early > 10);
  }

  TEST_CASE("ring allreduce traffic: rank r sends 2n - chunk(r+1) - chunk(r+2), i.e. 2(P-1)/P·n") {
    for (int p = 1; p <= 9; ++p) {
      for (std::size_t n : {std::size_t{1}, std::size_t(p + 1), std::size_t{72 * 5}}) {
        const auto s = ring_allreduce(p, n);
        for (int r = 0; r < p; ++r) {
          const std::size_t expected =
              p == 1 ? 0 : 2 * n - chunk(n, p, (r + 1) % p).length - chunk(n, p, (r + 2) % p).length;
          CHECK(s.elements_sent(r) == expected);
          CHECK(s.elements_received(r) ==
                (p == 1 ? 0 : 2 * n - chunk(n, p, r).length - chunk(n, p, (r + 1) % p).length));
          if (n % static_cast<std::size_t>(p) == 0) CHECK(s.elements_sent(r) == 2 * (p - 1) * n / p);
        }
      }
    }
  }

  TEST_CASE("Rabenseifner traffic: 2(p'-1)/p'·n per core rank, plus n for each fold and unfold") {
    const std::size_t n = 8 * 3 * 5;  // divisible by every p' <= 8
    for (int p = 1; p <= 9; ++p) {
      const int core = std::bit_floor(static_cast<unsigned>(p));
      const auto s = rabenseifner_allreduce(p, n);
      for (int r = 0; r < p; ++r) {
        CAPTURE(p);
        CAPTURE(r);
        std::size_t expected = r < core ? 2 * (core - 1) * n / core : n;  // extras send their buffer once
        if (r < p - core) expected += n;                                   // core partner sends the result back
        CHECK(s.elements_sent(r) == expected);
      }
      // Latency: 2·log2(p') exchanges, plus fold and unfold.
      CHECK(s.steps[0].size() == static_cast<std::size_t>(2 * std::countr_zero(static_cast<unsigned>(core)) +
                                                           (p > core ? 2 : 0)));
    }
  }

  TEST_CASE("topology-aware relabelling keeps the big halving steps inside a group") {
    const Topology t(8, 4, Placement::block, Link{}, Link{}, 0);
    const auto order = round_robin_order(t);
    CHECK(order == std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7});
    const auto s = topology_aware_allreduce(t, 800);
    // Rank 0's steps: RS n/2, n/4, n/8 then AG n/8, n/4, n/2; only the n/8 ones cross.
    std::vector<std::size_t> cross;
    for (const auto& step : s.steps[0]) cross.push_back(t.same_group(0, step.send_to) ? 0 : step.send.length);
    CHECK(cross == std::vector<std::size_t>{0, 0, 100, 100, 0, 0});
  }

  TEST_CASE("broadcast from every root reaches every rank") {
    for (int p = 1; p <= 9; ++p) {
      for (int root = 0; root < p; ++root) {
        for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{1000}}) {
          CAPTURE(p);
          CAPTURE(root);
          const auto s = binomial_broadcast(p, n, root);
          auto b = random_inputs(p, n, static_cast<unsigned>(root));
          const auto expected = b[static_cast<std::size_t>(root)];
          auto b2 = b;
          execute(s, b, static_cast<std::uint64_t>(p * 31 + root));
          for (const auto& x : b) REQUIRE(same_bits(x, expected));
          execute(scatter_allgather_broadcast(p, n, root), b2, static_cast<std::uint64_t>(p * 17 + root));
          for (const auto& x : b2) REQUIRE(same_bits(x, expected));
          std::size_t total = 0;
          for (int r = 0; r < p; ++r) {
            total += s.elements_sent(r);
            CHECK(s.elements_received(r) == (r == root ? 0 : n));
          }
          CHECK(total == (p - 1) * n);
          CHECK(s.messages_sent(root) == static_cast<std::size_t>(std::bit_width(static_cast<unsigned>(p - 1))));
        }
      }
    }
    CHECK_THROWS_AS(binomial_broadcast(3, 4, 3), Error);
    CHECK_THROWS_AS(scatter_allgather_broadcast(3, 4, -1), Error);
    // Scatter-allgather on 8 ranks, root 3: relative rank v receives its binomial
    // subtree's chunks (v & -v of them), then the 7 chunks it lacks from the ring.
    const auto sag = scatter_allgather_broadcast(8, 800, 3);
    for (int v = 0; v < 8; ++v) {
      CHECK(sag.elements_received((v + 3) % 8) == static_cast<std::size_t>(v == 0 ? 700 : 100 * (v & -v) + 700));
    }
  }

  TEST_CASE("choose_broadcast: binomial for small buffers, scatter-allgather for large") {
    const Topology t = Topology::uniform(8, Link{1e-5, 12e9});
    CHECK(choose_broadcast(t, 400).algorithm == Algorithm::binomial);
    CHECK(choose_broadcast(t, 400e6).algorithm == Algorithm::scatter_allgather);
    // log2(8)·(α + β·n) vs the schedule walk.
    CHECK(predict(binomial_broadcast(8, 1000, 0), t).seconds == doctest::Approx(3 * t.intra().time(4000)));
  }

  TEST_CASE("allgatherv concatenates variable-size blocks in rank order, zero-length ones included") {
    const std::vector<std::vector<std::size_t>> cases = {
        {5}, {0}, {0, 0, 0}, {3, 0, 2}, {0, 4}, {1, 2, 3, 0, 0, 7, 1}, {0, 0, 1, 0, 0, 0, 0, 0, 9}};
    for (const auto& counts : cases) {
      const int p = static_cast<int>(counts.size());
      const auto s = ring_allgatherv(counts);
      const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
      REQUIRE(s.elements == total);
      std::vector<float> expected;
      Buffers b(counts.size(), std::vector<float>(total, -1.0f));
      std::size_t offset = 0;
      for (int r = 0; r < p; ++r) {
        for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) {
          const float v = static_cast<float>(r * 100 + static_cast<int>(i));
          expected.push_back(v);
          b[static_cast<std::size_t>(r)][offset + i] = v;
        }
        offset += counts[static_cast<std::size_t>(r)];
      }
      execute(s, b, 9);
      for (int r = 0; r < p; ++r) {
        CHECK(b[static_cast<std::size_t>(r)] == expected);
        // Every block but the next rank's own passes through rank r once.
        CHECK(s.elements_sent(r) == (p == 1 ? 0 : total - counts[static_cast<std::size_t>((r + 1) % p)]));
      }
    }
  }

  TEST_CASE("schedules that do not match or deadlock are rejected") {
    Schedule mismatch(Collective::allreduce, Algorithm::ring, 2, 4);
    mismatch.add(0, Step::send_only(1, {0, 2}));
    mismatch.add(1, Step::receive_only(0, {0, 3}, Combine::copy));
    CHECK_THROWS_AS(mismatch.finalize(), Error);

    // Both ranks receive before they send.
    Schedule deadlock(Collective::allreduce, Algorithm::ring, 2, 4);
    for (int r = 0; r < 2; ++r) {
      deadlock.add(r, Step::receive_only(1 - r, {0, 4}, Combine::reduce));
      deadlock.add(r, Step::send_only(1 - r, {0, 4}));
    }
    deadlock.finalize();
    Buffers b(2, std::vector<float>(4, 1.0f));
    CHECK_THROWS_AS(execute(deadlock, b, 0), Error);
    CHECK_THROWS_AS(predict(deadlock, Topology::uniform(2)), Error);
  }

  TEST_CASE("topology from config: groups, placement, links") {
    auto doc = config::Document::parse(
        "[topology]\nranks = 10\ngroup_size = 4\nplacement = round_robin\nintra_bandwidth = 12e9\n"
        "intra_latency = 1e-6\ninter_bandwidth = 3e9\ninter_latency = 2.5e-3\nreduce_rate = 8e9\n",
        "topo.ini");
    const auto& section = doc.section("topology");
    const auto t = Topology::from_config(section);
    section.reject_unused();
    CHECK(t.ranks() == 10);
    CHECK(t.groups() == 3);
    CHECK(t.members(0) == std::vector<int>{0, 3, 6, 9});
    CHECK(t.members(2) == std::vector<int>{2, 5, 8});
    CHECK(t.same_group(1, 7));
    CHECK(t.link_class(0, 1) == LinkClass::inter);
    CHECK(t.link(0, 1).latency == doctest::Approx(2.5e-3));
    CHECK(t.link(0, 3).bandwidth == doctest::Approx(12e9));
    CHECK(t.reduce_time(8e9) == doctest::Approx(1.0));

    const auto block = Topology::from_config(config::Document::parse("[topology]\nranks = 6\ngroup_size = 4\n", "b")
                                                 .section("topology"));
    CHECK(block.members(1) == std::vector<int>{4, 5});
    CHECK(block.inter().bandwidth == block.intra().bandwidth);
    CHECK(block.reduce_time(1e9) == 0.0);

    auto bad = config::Document::parse("[topology]\nranks = 4\nplacement = ring\n", "bad.ini");
    CHECK_THROWS_AS(Topology::from_config(bad.section("topology")), ConfigError);
    auto bad_bw = config::Document::parse("[topology]\nranks = 4\ninter_bandwidth = 0\n", "bad.ini");
    try {
      Topology::from_config(bad_bw.section("topology"));
      FAIL("expected an error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("inter_bandwidth") != std::string::npos);
      CHECK(std::string(e.what()).find("bad.ini:3") != std::string::npos);
    }
  }

  TEST_CASE("cost model: schedule walk equals the closed forms on the reference's 8-node example") {
    // p = 8 nodes, q = 4 per supernode, contiguous ranks; β2 = 4·β1 (bandwidth ¼).
    const Link intra{2.5e-3, 12e9}, inter{2.5e-3, 3e9};
    const Topology t(8, 4, Placement::block, intra, inter, 8e9);
    const double bytes = 8.0 * 1024 * 1024 * 4;  // n = 32 MiB, a multiple of 4·P
    const double a = 2.5e-3, b1 = 1 / 12e9, b2 = 1 / 3e9, g = 1 / 8e9;

    const double raben = predict(rabenseifner_allreduce(8, bytes / 4), t).seconds;
    const double aware = predict(topology_aware_allreduce(t, bytes / 4), t).seconds;
    const double ring = predict(ring_allreduce(8, bytes / 4), t).seconds;
    // The reference's table (P Fig. 7).
    const double original_table = 6 * a + 7.0 / 8 * bytes * g + 3.0 / 4 * bytes * b1 + 1.0 * bytes * b2;
    const double aware_table = 6 * a + 7.0 / 8 * bytes * g + 3.0 / 2 * bytes * b1 + 1.0 / 4 * bytes * b2;
    const double ring_table = 2 * 7 * a + 2 * 7.0 / 8 * bytes * b2 + 7.0 / 8 * bytes * g;
    MESSAGE("8 nodes, 2 supernodes, 32 MiB: rabenseifner(block) ", raben, " s (table ", original_table,
            "), topology_aware ", aware, " s (table ", aware_table, "), ring ", ring, " s (formula ", ring_table, ")");
    CHECK(raben == doctest::Approx(original_table).epsilon(1e-12));
    CHECK(aware == doctest::Approx(aware_table).epsilon(1e-12));
    CHECK(ring == doctest::Approx(ring_table).epsilon(1e-12));
    CHECK(rabenseifner_block_formula(t, bytes) == doctest::Approx(original_table).epsilon(1e-12));
    CHECK(topology_aware_formula(t, bytes) == doctest::Approx(aware_table).epsilon(1e-12));
    CHECK(ring_formula(t, bytes) == doctest::Approx(ring_table).epsilon(1e-12));
    // Round-robin physical placement: plain Rabenseifner gets the aware cost.
    const Topology rr(8, 4, Placement::round_robin, intra, inter, 8e9);
    CHECK(predict(rabenseifner_allreduce(8, bytes / 4), rr).seconds == doctest::Approx(aware_table).epsilon(1e-12));
  }

  TEST_CASE("cost model: closed forms match the walk with distinct latencies and larger P") {
    for (int p : {4, 16, 64}) {
      for (int q : {1, 2, 4}) {
        const Topology t(p, q, Placement::block, Link{1e-6, 12e9}, Link{5e-6, 2e9}, 20e9);
        const double bytes = 4.0 * p * 1000;
        CAPTURE(p);
        CAPTURE(q);
        CHECK(predict(rabenseifner_allreduce(p, p * 1000), t).seconds ==
              doctest::Approx(rabenseifner_block_formula(t, bytes)).epsilon(1e-12));
        CHECK(predict(topology_aware_allreduce(t, p * 1000), t).seconds ==
              doctest::Approx(topology_aware_formula(t, bytes)).epsilon(1e-12));
        CHECK(predict(ring_allreduce(p, p * 1000), t).seconds ==
              doctest::Approx(ring_formula(t, bytes)).epsilon(1e-12));
      }
    }
  }

  TEST_CASE("choose_algorithm picks the cheapest predicted schedule") {
    // Sunway-like: ms latency, ¼ bandwidth between supernodes, contiguous ranks.
    const Topology sunway(16, 4, Placement::block, Link{2.5e-3, 12e9}, Link{2.5e-3, 3e9}, 8e9);
    const auto big = choose_algorithm(sunway, 100e6);
    CHECK(big.algorithm == Algorithm::topology_aware);
    CHECK(big.seconds == doctest::Approx(predict(topology_aware_allreduce(sunway, 25'000'000), sunway).seconds));
    // Tiny messages: latency dominates, ring's 2(P-1)α loses.
    CHECK(choose_algorithm(sunway, 64).algorithm != Algorithm::ring);
    // Six ranks, one group, large buffer: Rabenseifner's fold/unfold moves the whole buffer
    // twice more, so the ring wins.
    const Topology flat = Topology::uniform(6, Link{1e-6, 12e9}, 10e9);
    CHECK(choose_algorithm(flat, 64e6).algorithm == Algorithm::ring);
    for (double bytes : {4.0, 4e3, 4e6}) {
      const auto c = choose_algorithm(sunway, bytes);
      for (auto a : allreduce_algorithms) {
        CHECK(c.seconds <= predict(make_allreduce(a, sunway, static_cast<std::size_t>(bytes / 4)), sunway).seconds);
      }
      MESSAGE("16 ranks in 4 supernodes, ", bytes, " B: ", name(c.algorithm), " ", c.seconds, " s");
    }
  }

  TEST_CASE("zero-copy analysis: which sends may pass a view of the live buffer") {
    // Hand-made hazard: rank 0 sends [0,4) then immediately receives into it
    // from rank 1, which may not have consumed the first message yet.
    Schedule s(Collective::allreduce, Algorithm::ring, 2, 4);
    s.add(0, Step::send_only(1, {0, 4}));
    s.add(0, Step::receive_only(1, {0, 4}, Combine::copy));
    s.add(1, Step::send_only(0, {0, 4}));
    s.add(1, Step::receive_only(0, {0, 4}, Combine::reduce));
    s.finalize();
    const auto hazard = analyse_zero_copy(s);
    CHECK(hazard.overwritten.size() == 2);
    CHECK(hazard.outlive_sender.size() == 2);
    // … and the view executor does get wrong sums for some arrival orders.
    int wrong = 0;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      Buffers b{std::vector<float>(4, 1.0f), std::vector<float>(4, 2.0f)};
      execute(s, b, seed, Payload::view);
      wrong += b[1] != std::vector<float>(4, 3.0f) ? 1 : 0;
    }
    CHECK(wrong > 0);

    // Every generated schedule lets senders pass views during the collective;
    // some messages may still be read after their sender finished.
    for (int p = 1; p <= 9; ++p) {
      CAPTURE(p);
      for (auto a : allreduce_algorithms) {
        CAPTURE(name(a));
        const auto report = analyse_zero_copy(make_allreduce(a, test_topology(p), 1000));
        CHECK(report.views_safe_during_collective());
        if (p == 5 || p == 8) {
          // Copy-free sends give the same bits as copies under any order.
          const auto schedule = make_allreduce(a, test_topology(p), 1000);
          const auto inputs = random_inputs(p, 1000, 3);
          auto copied = inputs, viewed = inputs;
          execute(schedule, copied, 1);
          execute(schedule, viewed, 2, Payload::view);
          for (int r = 0; r < p; ++r) CHECK(same_bits(viewed[static_cast<std::size_t>(r)], copied[0]));
        }
        if (p == 8) {
          MESSAGE("P=8 ", name(a), ": ", report.outlive_sender.size(), " sends may outlive their sender");
        }
      }
      for (int root = 0; root < p; ++root) {
        CHECK(analyse_zero_copy(binomial_broadcast(p, 10, root)).overwritten.empty());
        CHECK(analyse_zero_copy(scatter_allgather_broadcast(p, 10, root)).overwritten.empty());
      }
      std::vector<std::size_t> counts(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(r % 3);
      CHECK(analyse_zero_copy(ring_allgatherv(counts)).overwritten.empty());
    }
  }
}
