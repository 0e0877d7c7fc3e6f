// The step engine (actors/sync/step_engine.hpp) without actors: P ranks, each
// with its engine, inbox and buffer, exchange chunks through a list of chunks
// in flight, delivered in an order drawn from a seed. Every collective
// through the engine equals the plain sum (integer inputs) and the reference
// executor's bits (random inputs), whatever the arrival order; a step sends
// once and waits for its own chunk; a chunk of the wrong range is refused;
// and the packed allgather hands every rank every message, whatever their
// sizes (an empty one included), passing them on without copying.

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "actors/sync/float_buffer.hpp"
#include "actors/sync/packed_slots.hpp"
#include "actors/sync/shard_actor.hpp"
#include "actors/sync/shard_inbox.hpp"
#include "actors/sync/step_engine.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/reference_executor.hpp"
#include "support/collective_inputs.hpp"

using namespace taihu;
using namespace taihu::sync;
using namespace taihu::collectives;
using namespace taihu::testing;

namespace {

// P ranks running their steps of one schedule over buffers of type B, with
// the chunks between them in flight until the test delivers them.
template <class B>
struct Ranks {
  std::vector<ShardInbox> inboxes;
  std::vector<StepEngine> engines;
  std::vector<B> buffers;
  std::vector<std::pair<int, msg::Chunk>> in_flight;  // (receiver, chunk)
  std::size_t sent = 0;         // chunks
  std::size_t sent_floats = 0;  // their payloads
  std::size_t early = 0;  // delivered before their step waited for them

  Ranks(const Schedule& schedule, std::vector<B> rank_buffers) : buffers(std::move(rank_buffers)) {
    for (int r = 0; r < schedule.ranks; ++r) {
      inboxes.emplace_back();
      inboxes.back().init("rank " + std::to_string(r), 0, schedule.elements, schedule.ranks);
      engines.emplace_back(0, r, schedule.steps[static_cast<std::size_t>(r)]);
    }
  }

  int ranks() const { return static_cast<int>(engines.size()); }

  bool advance(int r) {
    const auto i = static_cast<std::size_t>(r);
    return engines[i].advance(inboxes[i], buffers[i], [&](int to, msg::Chunk chunk) {
      ++sent;
      sent_floats += chunk.size();
      in_flight.emplace_back(to, std::move(chunk));
    });
  }

  void deliver(std::size_t k) {
    auto [to, chunk] = std::move(in_flight[k]);
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(k));
    const auto i = static_cast<std::size_t>(to);
    if (!engines[i].awaits(chunk)) ++early;
    inboxes[i].keep(std::move(chunk));
    advance(to);
  }

  // One iteration, chunks delivered in an order drawn from `seed`.
  void run(std::uint64_t iteration, std::uint64_t seed) {
    for (auto& e : engines) e.start(iteration);
    for (int r = 0; r < ranks(); ++r) advance(r);
    std::mt19937_64 rng(seed);
    while (!in_flight.empty()) deliver(std::uniform_int_distribution<std::size_t>(0, in_flight.size() - 1)(rng));
    for (int r = 0; r < ranks(); ++r) {
      CAPTURE(r);
      REQUIRE(engines[static_cast<std::size_t>(r)].done());
    }
  }
};

// Every rank's buffer bound to its input, sends as shard_specs decides for `mode`.
std::vector<FloatBuffer> float_buffers(const Schedule& schedule, const Buffers& inputs, SendMode mode) {
  std::vector<FloatBuffer> buffers;
  for (auto& spec : shard_specs(schedule, 0, mode)) {
    buffers.emplace_back(std::move(spec.send_view), nullptr);
    buffers.back().bind(msg::TensorPayload::copy_of(inputs[static_cast<std::size_t>(spec.rank)]));
  }
  return buffers;
}

// The schedule through the engine: every rank's buffer afterwards.
Buffers run_floats(const Schedule& schedule, const Buffers& inputs, SendMode mode, std::uint64_t seed,
                   std::size_t* early = nullptr) {
  Ranks<FloatBuffer> ranks(schedule, float_buffers(schedule, inputs, mode));
  ranks.run(0, seed);
  if (early) *early = ranks.early;
  std::size_t messages = 0, floats = 0;
  for (int r = 0; r < schedule.ranks; ++r) {
    messages += schedule.messages_sent(r);
    floats += schedule.elements_sent(r);
  }
  CHECK(ranks.sent == messages);
  CHECK(ranks.sent_floats == floats);
  Buffers out;
  for (auto& b : ranks.buffers) out.push_back(b.release().to_vector());
  return out;
}

// One iteration of the packed allgather: rank r starts with messages[r]; every
// rank's slots afterwards, and the ranks (whose payloads are compared).
Ranks<PackedSlots> run_packed(const std::vector<std::vector<float>>& messages, std::size_t capacity,
                              std::uint64_t seed) {
  const int p = static_cast<int>(messages.size());
  const Schedule schedule = PackedSlots::ring(p, capacity);
  std::vector<PackedSlots> slots;
  for (int r = 0; r < p; ++r) {
    slots.emplace_back(p, capacity);
    slots.back().put(r, msg::TensorPayload::copy_of(messages[static_cast<std::size_t>(r)]));
  }
  Ranks<PackedSlots> ranks(schedule, std::move(slots));
  ranks.run(0, seed);
  return ranks;
}

}  // namespace

TEST_SUITE("step engine") {
  TEST_CASE("every allreduce through the engine equals the plain sum, P = 1..7, both send modes") {
    for (Algorithm a : allreduce_algorithms)
      for (int p = 1; p <= 7; ++p)
        for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{97}})
          for (SendMode mode : {SendMode::view_where_safe, SendMode::copy}) {
            CAPTURE(name(a));
            CAPTURE(p);
            CAPTURE(n);
            CAPTURE(static_cast<int>(mode));
            const Schedule schedule = make_allreduce(a, test_topology(p), n);
            const Buffers inputs = integer_inputs(p, n, p);
            const auto sum = plain_sum(inputs);
            for (const auto& out : run_floats(schedule, inputs, mode, 11)) REQUIRE(out == sum);
          }
  }

  TEST_CASE("random floats: the reference executor's bits on every rank, whatever the arrival order") {
    std::size_t early = 0;
    for (Algorithm a : allreduce_algorithms)
      for (int p : {2, 3, 5, 7}) {
        CAPTURE(name(a));
        CAPTURE(p);
        const std::size_t n = 1001;
        const Schedule schedule = make_allreduce(a, test_topology(p), n);
        const Buffers inputs = random_inputs(p, n, 17 + static_cast<std::uint64_t>(p));
        auto reference = inputs;
        execute(schedule, reference, 1);
        for (std::uint64_t seed : {1u, 2u, 3u}) {
          std::size_t e = 0;
          const auto results = run_floats(schedule, inputs, SendMode::view_where_safe, seed, &e);
          early += e;
          for (const auto& out : results) REQUIRE(same_bits(out, reference[0]));
        }
      }
    CHECK(early > 0);  // chunks did come before their step
  }

  TEST_CASE("broadcast and allgatherv through the engine") {
    for (int p : {1, 2, 3, 5, 6}) {
      CAPTURE(p);
      const std::size_t n = 23;
      const Buffers inputs = integer_inputs(p, n, 3);
      for (int root = 0; root < p; ++root)
        for (const Schedule& schedule : {binomial_broadcast(p, n, root), scatter_allgather_broadcast(p, n, root)}) {
          CAPTURE(root);
          CAPTURE(name(schedule.algorithm));
          for (const auto& out : run_floats(schedule, inputs, SendMode::view_where_safe, 5))
            REQUIRE(out == inputs[static_cast<std::size_t>(root)]);
        }
      // Blocks of 0..p-1 elements (rank 0's empty): the concatenation in rank order.
      std::vector<std::size_t> counts;
      std::vector<float> expected;
      Buffers blocks_in(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) {
        counts.push_back(static_cast<std::size_t>(r));
        for (int i = 0; i < r; ++i) expected.push_back(static_cast<float>(100 * r + i));
      }
      const Schedule gather = ring_allgatherv(counts);
      std::size_t at = 0;
      for (int r = 0; r < p; ++r) {
        auto& in = blocks_in[static_cast<std::size_t>(r)];
        in.assign(gather.elements, -1.0f);
        for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) in[at + i] = expected[at + i];
        at += counts[static_cast<std::size_t>(r)];
      }
      for (const auto& out : run_floats(gather, blocks_in, SendMode::view_where_safe, 9)) REQUIRE(out == expected);
    }
  }

  TEST_CASE("a step sends once, and waits for its own chunk even when later ones are there") {
    // Ring allreduce on 3 ranks: rank 0 receives from rank 2 in each of its 4 steps.
    const Schedule schedule = ring_allreduce(3, 6);
    Ranks<FloatBuffer> ranks(schedule, float_buffers(schedule, integer_inputs(3, 6, 0), SendMode::copy));
    for (auto& e : ranks.engines) e.start(0);
    CHECK_FALSE(ranks.advance(0));
    CHECK_FALSE(ranks.advance(0));  // still waiting: its first chunk went out once
    REQUIRE(ranks.in_flight.size() == 1);
    CHECK(ranks.in_flight[0].second.seq == 0);
    // Rank 2's second chunk to rank 0 (seq 1) before its first: kept, not taken.
    ranks.advance(1);
    ranks.advance(2);
    msg::Chunk second = ranks.in_flight.back().second;
    second.seq = 1;
    second.offset = schedule.steps[0][1].recv.offset;
    CHECK_FALSE(ranks.engines[0].awaits(second));
    CHECK(ranks.engines[0].expects(second));
    ranks.inboxes[0].keep(std::move(second));
    CHECK_FALSE(ranks.advance(0));
    CHECK(ranks.in_flight.size() == 3);  // rank 0 sent nothing more
  }

  TEST_CASE("a chunk whose range is not the step's stops the engine, naming the shard") {
    const Schedule schedule = ring_allreduce(2, 8);  // rank 0 first receives [4, +4) from rank 1
    Ranks<FloatBuffer> ranks(schedule, float_buffers(schedule, integer_inputs(2, 8, 0), SendMode::copy));
    ranks.engines[0].start(0);
    ranks.inboxes[0].keep(msg::Chunk{0, 0, 1, 0, 4, msg::TensorPayload::copy_of(std::vector<float>(3)), nullptr});
    CHECK_THROWS_WITH(ranks.advance(0), doctest::Contains("rank 0: chunk 0 from rank 1 holds [4, +3), step 0 expects [4, +4)"));
  }

  TEST_CASE("the packed allgather hands every rank every message, whatever the sizes, an empty one included") {
    const std::size_t sizes[] = {0, 5, 3, 8, 1, 6};  // words; rank 0's message is empty, rank 3's fills its slot
    for (int p = 1; p <= 6; ++p) {
      CAPTURE(p);
      std::vector<std::vector<float>> messages;
      std::size_t words = 0;
      for (int r = 0; r < p; ++r) {
        std::vector<float> m(sizes[r]);
        for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(r * 100) + static_cast<float>(i);
        words += m.size();
        messages.push_back(std::move(m));
      }
      for (std::uint64_t seed : {1u, 2u}) {
        auto ranks = run_packed(messages, 8, seed);
        for (int r = 0; r < p; ++r)
          for (int origin = 0; origin < p; ++origin) {
            CAPTURE(r);
            CAPTURE(origin);
            const auto& got = ranks.buffers[static_cast<std::size_t>(r)].message(origin);
            REQUIRE(same_bits(got.span(), messages[static_cast<std::size_t>(origin)]));
            // Passed on by reference count: the very buffer its origin put there.
            CHECK(got.data() == ranks.buffers[static_cast<std::size_t>(origin)].message(origin).data());
          }
        // Each message goes to P-1 ranks, with its own length only (not the slot's).
        CHECK(ranks.sent == static_cast<std::size_t>(p * (p - 1)));
        CHECK(ranks.sent_floats == static_cast<std::size_t>(p - 1) * words);
      }
    }
  }

  TEST_CASE("the packed slots refuse a message longer than a slot") {
    PackedSlots slots(3, 4);
    CHECK_THROWS_WITH(slots.put(1, msg::TensorPayload::copy_of(std::vector<float>(5))),
                      doctest::Contains("a message of 5 words for slots of 4"));
    const Schedule schedule = PackedSlots::ring(2, 4);  // rank 0 receives slot 1, [4, +4), from rank 1
    Ranks<PackedSlots> ranks(schedule, {PackedSlots(2, 4), PackedSlots(2, 4)});
    ranks.engines[0].start(0);
    ranks.inboxes[0].keep(msg::Chunk{0, 0, 1, 0, 4, msg::TensorPayload::copy_of(std::vector<float>(5)), nullptr});
    CHECK_THROWS_WITH(ranks.advance(0), doctest::Contains("chunk 0 from rank 1 holds [4, +5), step 0 expects [4, +4)"));
  }
}
