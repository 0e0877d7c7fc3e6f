// RedSync's compressed shard actors (actors/sync/compressed_shard_actor.hpp):
// the ring allgather of packed messages gives every rank the plain sum of
// every rank's decompressed message (a reference BucketCompressor per rank
// redoes it), for odd rank counts and 1; an index sent by several ranks is
// summed; nothing is lost over iterations; the same works across the data
// plane; a malformed message stops the shard with a clear error; and in
// training, density 1 with momentum correction reproduces dense momentum SGD.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actors/compute/coordinator.hpp"
#include "support/shard_wiring.hpp"
#include "support/training.hpp"
#include "actors/chunk_link/chunk_link.hpp"
#include "collectives/algorithms.hpp"
#include "actors/sync/compressed_shard_actor.hpp"
#include "core/common/random.hpp"
#include "core/compress/packed.hpp"
#include "support/actor_fixture.hpp"
#include "support/collective_inputs.hpp"
#include "support/two_nodes.hpp"
#include "support/mlp_net.hpp"
#include "support/temp_dir.hpp"

#include <caf/scheduler/test_coordinator.hpp>

#include <random>

using namespace taihu;
using namespace taihu::sync;
using namespace taihu::collectives;
using taihu::testing::TempDir;

namespace {

using testing::Buffers;
using testing::same_bits;

CompressedShardSpec shard_spec(std::uint32_t bucket, int rank, int ranks, std::size_t elements,
                               std::vector<compress::Segment> segments) {
  CompressedShardSpec spec;
  spec.bucket = bucket;
  spec.rank = rank;
  spec.ranks = ranks;
  spec.elements = elements;
  spec.segments = std::move(segments);
  return spec;
}

compress::Segment segment(std::size_t offset, std::size_t count, compress::Method method, double density,
                          float momentum = 0.0f) {
  compress::Options o;
  o.method = method;
  o.schedule.density = density;
  o.momentum = momentum;
  std::string name = "s";
  name += std::to_string(offset);
  return compress::Segment{name, offset, count, o};
}

// A sparse top-k range, a dense range, a binary-search range.
std::vector<compress::Segment> mixed_segments() {
  return {segment(0, 400, compress::Method::topk, 0.02), segment(400, 50, compress::Method::dense, 1.0),
          segment(450, 550, compress::Method::bsearch, 0.01)};
}

// P compressed shards of one bucket, wired to a scoped actor as their owner.
struct CompressedGroup {
  caf::actor_system& system;
  std::uint32_t bucket = 7;
  std::size_t elements;
  caf::scoped_actor owner{system};
  std::vector<caf::actor> shards;

  CompressedGroup(caf::actor_system& sys, int p, std::size_t n, const std::vector<compress::Segment>& segments)
      : system(sys), elements(n) {
    for (int r = 0; r < p; ++r) shards.push_back(caf::actor_cast<caf::actor>(spawn_compressed_shard(system, shard_spec(bucket, r, p, n, segments))));
    for (auto& shard : shards) owner->send(shard, testing::shard_init(bucket, shards, owner));
  }
  ~CompressedGroup() {
    for (auto& shard : shards) owner->send_exit(shard, caf::exit_reason::user_shutdown);
  }

  void start(std::uint64_t iteration, const Buffers& inputs) {
    for (std::size_t r = 0; r < shards.size(); ++r)
      owner->send(shards[r], msg::GradientReady{bucket, iteration, msg::TensorPayload::copy_of(inputs[r])});
  }

  // Every rank's Reduced of `iteration`, by rank.
  std::vector<msg::Reduced> collect(std::uint64_t iteration) {
    std::vector<msg::Reduced> out(shards.size());
    std::size_t got = 0;
    bool timed_out = false;
    owner->receive_while([&] { return got < shards.size() && !timed_out; })(
        [&](msg::Reduced& r) {
          REQUIRE(r.bucket == bucket);
          REQUIRE(r.iteration == iteration);
          out[static_cast<std::size_t>(r.rank)] = std::move(r);
          ++got;
        },
        caf::after(std::chrono::seconds(10)) >> [&] { timed_out = true; });
    REQUIRE_MESSAGE(!timed_out, "only ", got, " of ", shards.size(), " ranks finished");
    return out;
  }
};

// The reference: one BucketCompressor per rank, messages added in rank order.
struct Reference {
  std::vector<compress::BucketCompressor> compressors;
  std::vector<std::vector<std::uint32_t>> messages;

  Reference(int p, std::size_t n, std::vector<compress::Segment> segments) : messages(static_cast<std::size_t>(p)) {
    for (auto& s : segments) s.options.workers = p;
    for (int r = 0; r < p; ++r) compressors.emplace_back(n, segments);
  }
  std::vector<float> step(const Buffers& inputs) {
    std::vector<std::span<const std::uint32_t>> views;
    for (std::size_t r = 0; r < compressors.size(); ++r) {
      compressors[r].compress(inputs[r], 1.0f, messages[r]);
      views.emplace_back(messages[r]);
    }
    std::vector<float> sum(compressors[0].elements());
    compress::decompress_sum(views, sum);
    return sum;
  }
  // What rank r sends in the ring: every message but its right neighbour's.
  std::uint64_t bytes_sent_by(int r) const {
    const int p = static_cast<int>(messages.size());
    std::uint64_t bytes = 0;
    for (int q = 0; q < p; ++q)
      if (q != (r + 1) % p) bytes += compress::packed_bytes(messages[static_cast<std::size_t>(q)]);
    return p == 1 ? 0 : bytes;
  }
};

// Where rank `origin`'s message sits in the allgather (actors/sync/packed_slots.hpp).
std::uint64_t slot_offset(int origin, std::size_t n, const std::vector<compress::Segment>& segments) {
  return static_cast<std::uint64_t>(origin) * compress::BucketCompressor(n, segments).max_message_words();
}

std::string reason_of_down(caf::scoped_actor& owner, const caf::actor& shard) {
  std::string reason;
  owner->receive(
      [&](const caf::down_msg& m) {
        if (m.source == shard && m.reason) reason = owner->system().render(m.reason);
      },
      caf::after(std::chrono::seconds(5)) >> [] {});
  return reason;
}

// Training: a small MLP, 4 workers, fixed learning rate, no weight decay.
std::string train_config(const TempDir& dir, const std::string& solver_momentum, const std::string& compress) {
  return "net = mlp.ini\nepochs = 1\nbatch_size = 4\nworkers = 3\ntest_batch_size = 20\nseed = 5\ndisplay = 0\n"
         "[data]\nsource = synthetic\nshape = 1 6 6\nclasses = 4\ntrain_size = 48\ntest_size = 40\nprefetch = 1\n"
         "[solver]\ntype = sgd\nbase_lr = 0.1\nmomentum = " +
         solver_momentum +
         "\nweight_decay = 0\n[sync]\nalgorithm = ring\nbucket_mb = 0.0005\nstep_timeout = 20\n" + compress +
         "\n[output]\ndir = " + dir.path().string() + "/out\nmetrics = \ncheckpoint = \n";
}

config::Document load(const TempDir& dir, const std::string& text) {
  dir.write("mlp.ini", taihu::testing::mlp_net({.dropout = false, .accuracy = true}));
  return config::Document::parse_file(dir.write("app.ini", text));
}

// The deterministic `testing` scheduler: the test picks which message runs next.
struct InterleavingConfig : caf::actor_system_config {
  InterleavingConfig() {
    add_message_types<caf::id_block::taihu>();
    set("scheduler.policy", caf::atom("testing"));
  }
};

struct Collected {
  std::vector<msg::Reduced> reduced;
};

// `iterations` back-to-back iterations of a mixed bucket (packed allgather +
// dense allreduce), GradientReady before ShardInit, messages run in an order
// drawn from `seed`; every rank's result must equal the in-order reference.
void run_interleaved(int p, int iterations, std::uint64_t seed) {
  InterleavingConfig config;
  caf::actor_system system{config};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler());
  auto collected = std::make_shared<Collected>();
  auto owner = system.spawn([collected]() -> caf::behavior {
    return {[collected](msg::Reduced& r) { collected->reduced.push_back(std::move(r)); }};
  });
  const std::size_t n = 1000;
  const Schedule dense_schedule = make_allreduce(Algorithm::ring, Topology::uniform(p, Link{1e-6, 1e9}, 1e9), 50);
  std::vector<caf::actor> shards;
  for (int r = 0; r < p; ++r) {
    CompressedShardSpec spec = shard_spec(0, r, p, n, mixed_segments());
    spec.split_dense = true;
    spec.dense_steps = dense_schedule.steps[static_cast<std::size_t>(r)];
    shards.push_back(caf::actor_cast<caf::actor>(spawn_compressed_shard(system, std::move(spec))));
  }
  std::vector<Buffers> inputs;
  for (int it = 0; it < iterations; ++it) inputs.push_back(testing::random_inputs(p, n, 300 + it));
  for (int it = 0; it < iterations; ++it)
    for (int r = 0; r < p; ++r)
      caf::anon_send(shards[static_cast<std::size_t>(r)],
                     msg::GradientReady{0, static_cast<std::uint64_t>(it),
                                        msg::TensorPayload::copy_of(inputs[static_cast<std::size_t>(it)][static_cast<std::size_t>(r)])});
  for (auto& shard : shards) caf::anon_send(shard, testing::shard_init(0, shards, owner));
  std::mt19937_64 rng(seed);
  while (!sched.jobs.empty()) {
    std::swap(sched.jobs.front(), sched.jobs[std::uniform_int_distribution<std::size_t>(0, sched.jobs.size() - 1)(rng)]);
    sched.run_once();
  }
  REQUIRE(collected->reduced.size() == static_cast<std::size_t>(p * iterations));
  // The same sums on every rank, per iteration, whatever the order.
  std::vector<std::vector<float>> first(static_cast<std::size_t>(iterations));
  for (const auto& r : collected->reduced) {
    auto& f = first[r.iteration];
    if (f.empty()) f = r.buffer.to_vector();
    REQUIRE(same_bits(r.buffer.to_vector(), f));
  }
  // And the sparse part equals the in-order reference's.
  Reference reference(p, n, mixed_segments());  // no split: its dense segment in the message
  for (int it = 0; it < iterations; ++it) {
    const auto expected = reference.step(inputs[static_cast<std::size_t>(it)]);
    for (std::size_t i = 0; i < n; ++i) {
      if (i >= 400 && i < 450) {
        REQUIRE(first[static_cast<std::size_t>(it)][i] == doctest::Approx(expected[i]).epsilon(1e-5));
      } else {
        REQUIRE(first[static_cast<std::size_t>(it)][i] == expected[i]);
      }
    }
  }
  for (auto& shard : shards) caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
  sched.run();
}

}  // namespace

TEST_SUITE("compressed shard actors") {
  TEST_CASE("random interleavings of back-to-back iterations give the same sums") {
    for (int p : {2, 3, 4})
      for (std::uint64_t seed : {1u, 2u, 3u}) {
        CAPTURE(p);
        CAPTURE(seed);
        run_interleaved(p, 3, seed);
      }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "the ring allgather sums every rank's decompressed message, P = 1, 3, 5") {
    const std::size_t n = 1000;
    for (int p : {1, 3, 5}) {
      CAPTURE(p);
      CompressedGroup group(system, p, n, mixed_segments());
      Reference reference(p, n, mixed_segments());
      for (std::uint64_t it = 0; it < 4; ++it) {
        CAPTURE(it);
        const Buffers inputs = testing::random_inputs(p, n, 100 + it);
        group.start(it, inputs);
        const auto expected = reference.step(inputs);
        const auto results = group.collect(it);
        for (int r = 0; r < p; ++r) {
          CAPTURE(r);
          const auto& out = results[static_cast<std::size_t>(r)];
          CHECK(same_bits(out.buffer.to_vector(), expected));  // residuals live in the actors, as in the reference
          CHECK(out.bytes_sent == reference.bytes_sent_by(r));
        }
      }
      // Sparse really is sparse: well under the dense message of 4000 bytes.
      CHECK(compress::packed_bytes(reference.messages[0]) < 1000);
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "dense segments of a mixed bucket go by allreduce beside the allgather") {
    const std::size_t n = 1000;
    // Sparse [0, 400) and [450, 1000); dense [400, 450), allreduced.
    const std::vector<compress::Segment> sparse_only{segment(0, 400, compress::Method::topk, 0.02),
                                                     segment(400, 550, compress::Method::bsearch, 0.01)};
    for (int p : {2, 3, 5}) {
      CAPTURE(p);
      const Schedule dense_schedule = make_allreduce(Algorithm::ring, Topology::uniform(p, Link{1e-6, 1e9}, 1e9), 50);
      caf::scoped_actor owner{system};
      std::vector<caf::actor> shards;
      for (int r = 0; r < p; ++r) {
        CompressedShardSpec spec = shard_spec(7, r, p, n, mixed_segments());
        spec.split_dense = true;
        spec.dense_steps = dense_schedule.steps[static_cast<std::size_t>(r)];
        shards.push_back(caf::actor_cast<caf::actor>(spawn_compressed_shard(system, std::move(spec))));
      }
      for (auto& shard : shards) owner->send(shard, testing::shard_init(7, shards, owner));
      Reference reference(p, 950, sparse_only);  // the sparse part, compacted
      for (std::uint64_t it = 0; it < 3; ++it) {
        const Buffers inputs = testing::random_inputs(p, n, 50 + it);
        for (int r = 0; r < p; ++r)
          owner->send(shards[static_cast<std::size_t>(r)],
                      msg::GradientReady{7, it, msg::TensorPayload::copy_of(inputs[static_cast<std::size_t>(r)])});
        Buffers compact(static_cast<std::size_t>(p));
        std::vector<double> dense_sum(50, 0.0);
        for (int r = 0; r < p; ++r) {
          const auto& in = inputs[static_cast<std::size_t>(r)];
          auto& c = compact[static_cast<std::size_t>(r)];
          c.assign(in.begin(), in.begin() + 400);
          c.insert(c.end(), in.begin() + 450, in.end());
          for (std::size_t i = 0; i < 50; ++i) dense_sum[i] += in[400 + i];
        }
        const auto sparse_sum = reference.step(compact);
        std::uint64_t message_bytes = 0;
        for (const auto& m : reference.messages) message_bytes += compress::packed_bytes(m);
        std::uint64_t bytes = 0;
        int got = 0;
        owner->receive_for(got, p)([&](msg::Reduced& red) {
          REQUIRE(red.iteration == it);
          const auto out = red.buffer.to_vector();
          for (std::size_t i = 0; i < 400; ++i) REQUIRE(out[i] == sparse_sum[i]);
          for (std::size_t i = 450; i < n; ++i) REQUIRE(out[i] == sparse_sum[i - 50]);
          for (std::size_t i = 0; i < 50; ++i) REQUIRE(out[400 + i] == doctest::Approx(dense_sum[i]).epsilon(1e-5));
          bytes += red.bytes_sent;
        });
        // Every message to P-1 ranks, plus the ring allreduce of 50 floats.
        CHECK(bytes == (p - 1) * message_bytes + 2 * (p - 1) * 50 * 4);
      }
      for (auto& shard : shards) owner->send_exit(shard, caf::exit_reason::user_shutdown);
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "packed messages of different sizes reach every rank") {
    // Binary search keeps what passes a threshold (k to 2k entries): the
    // ranks' messages differ in length, the more so for unlike gradients
    // (rank 1's has few large entries, rank 2's is zero).
    const std::size_t n = 600;
    const int p = 4;
    const std::vector<compress::Segment> segments{segment(0, n, compress::Method::bsearch, 0.02)};
    CompressedGroup group(system, p, n, segments);
    Reference reference(p, n, segments);
    for (std::uint64_t it = 0; it < 2; ++it) {
      CAPTURE(it);
      Buffers inputs = testing::random_inputs(p, n, 40 + it);
      for (std::size_t i = 0; i < n; ++i) {
        inputs[1][i] = i % 7 == 0 ? inputs[1][i] * 100.0f : 0.0f;  // few large entries
        inputs[2][i] = 0.0f;
      }
      group.start(it, inputs);
      const auto expected = reference.step(inputs);
      std::vector<std::size_t> sizes;
      std::string words;
      for (const auto& m : reference.messages) {
        sizes.push_back(m.size());
        words += std::to_string(m.size()) + " ";
      }
      CAPTURE(words);
      CHECK(std::set<std::size_t>(sizes.begin(), sizes.end()).size() >= 3);
      for (const auto& out : group.collect(it)) {
        CHECK(same_bits(out.buffer.to_vector(), expected));
        CHECK(out.bytes_sent == reference.bytes_sent_by(out.rank));
      }
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "the same index from several ranks is summed, not overwritten") {
    // k = 2 of 8 per rank; all ranks send index 5, and one other index each.
    const std::vector<compress::Segment> segments{segment(0, 8, compress::Method::topk, 0.25)};
    CompressedGroup group(system, 3, 8, segments);
    Buffers inputs{{0, 9, 0, 0, 0, 10, 0, 0}, {0, 0, 0, -7, 0, 20, 0, 0}, {0, 9, 0, 0, 0, 30, 0, 0}};
    group.start(0, inputs);
    for (const auto& r : group.collect(0))
      CHECK(r.buffer.to_vector() == std::vector<float>{0, 18, 0, -7, 0, 60, 0, 0});
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "nothing is lost: once the residuals drain, the sums add up to the gradients") {
    // Integer-valued gradients (exact float sums); k = 4 of 16 per iteration.
    const std::size_t n = 16;
    const int p = 3;
    CompressedGroup group(system, p, n, {segment(0, n, compress::Method::topk, 0.25)});
    std::vector<float> total_in(n, 0.0f), total_out(n, 0.0f);
    Rng rng(9);
    std::uint64_t it = 0;
    for (; it < 3; ++it) {
      Buffers inputs(p, std::vector<float>(n));
      for (auto& v : inputs)
        for (std::size_t i = 0; i < n; ++i) {
          v[i] = static_cast<float>(static_cast<int>(rng.below(21)) - 10);
          total_in[i] += v[i];
        }
      group.start(it, inputs);
      const auto results = group.collect(it);
      for (std::size_t i = 0; i < n; ++i) total_out[i] += results[0].buffer[i];
      CHECK(total_out != total_in);
    }
    // Zero gradients: each iteration sends 4 more residual entries per rank.
    for (; it < 3 + n / 4; ++it) {
      group.start(it, Buffers(p, std::vector<float>(n, 0.0f)));
      const auto results = group.collect(it);
      for (std::size_t i = 0; i < n; ++i) total_out[i] += results[0].buffer[i];
    }
    CHECK(total_out == total_in);
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "a malformed packed message stops the shard with a clear error") {
    const std::vector<compress::Segment> segments{segment(0, 100, compress::Method::topk, 0.05)};
    SUBCASE("garbage words") {
      CompressedGroup group(system, 2, 100, segments);
      group.owner->monitor(group.shards[0]);
      std::vector<float> garbage(12);
      for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<float>(i) * 1.5f;
      group.owner->send(group.shards[0], msg::Chunk{7, 0, 1, 0, slot_offset(1, 100, segments),
                                                   msg::TensorPayload::copy_of(garbage), nullptr});
      group.owner->send(group.shards[0],
                        msg::GradientReady{7, 0, msg::TensorPayload::copy_of(std::vector<float>(100, 1.0f))});
      const std::string reason = reason_of_down(group.owner, group.shards[0]);
      CHECK_MESSAGE(reason.find("compressed shard 7/0: the packed message of rank 1 in iteration 0 is malformed") !=
                        std::string::npos,
                    reason);
    }
    SUBCASE("a truncated message") {
      CompressedGroup group(system, 2, 100, segments);
      group.owner->monitor(group.shards[0]);
      compress::BucketCompressor c(100, segments);
      std::vector<std::uint32_t> words;
      c.compress(std::vector<float>(100, 2.0f), 1.0f, words);
      words.pop_back();
      group.owner->send(group.shards[0],
                        msg::Chunk{7, 0, 1, 0, slot_offset(1, 100, segments),
                                   msg::TensorPayload::copy_of(compress::words_as_floats(words)), nullptr});
      group.owner->send(group.shards[0],
                        msg::GradientReady{7, 0, msg::TensorPayload::copy_of(std::vector<float>(100, 1.0f))});
      const std::string reason = reason_of_down(group.owner, group.shards[0]);
      CHECK_MESSAGE(reason.find("the packed message of rank 1 in iteration 0 is malformed") != std::string::npos,
                    reason);
    }
    SUBCASE("a message in the wrong slot") {
      CompressedGroup group(system, 3, 100, segments);
      group.owner->monitor(group.shards[0]);
      // Rank 0's left neighbour is rank 2; in step 0 it forwards its own message (origin 2), not rank 1's.
      const std::uint64_t wrong = slot_offset(1, 100, segments), right = slot_offset(2, 100, segments);
      group.owner->send(group.shards[0],
                        msg::Chunk{7, 0, 2, 0, wrong, msg::TensorPayload::copy_of(std::vector<float>(5)), nullptr});
      group.owner->send(group.shards[0],
                        msg::GradientReady{7, 0, msg::TensorPayload::copy_of(std::vector<float>(100, 1.0f))});
      const std::string reason = reason_of_down(group.owner, group.shards[0]);
      CHECK_MESSAGE(reason.find(fmt::format("compressed shard 7/0: chunk 0 from rank 2 holds [{}, +5), step 0 expects [{}, ",
                                            wrong, right)) != std::string::npos,
                    reason);
    }
    SUBCASE("a chunk no step receives") {
      CompressedGroup group(system, 3, 100, segments);
      group.owner->monitor(group.shards[0]);
      // Rank 0 receives only from its left neighbour, rank 2.
      group.owner->send(group.shards[0], msg::Chunk{7, 0, 1, 0, slot_offset(1, 100, segments),
                                                   msg::TensorPayload::copy_of(std::vector<float>(5)), nullptr});
      const std::string reason = reason_of_down(group.owner, group.shards[0]);
      CHECK_MESSAGE(reason.find("compressed shard 7/0: no step of this rank receives chunk 0 from rank 1") !=
                        std::string::npos,
                    reason);
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "compressed shards on two nodes joined by the data plane") {
    // Through same-host channels, and through TLS (data-plane tls = always).
    for (const auto tls : {transport::TlsMode::between_hosts, transport::TlsMode::always}) {
    CAPTURE(transport::tls_mode_name(tls));
    const int p = 3;
    const std::size_t n = 1000;
    const std::vector<int> rank_node{0, 1, 0};
    auto links = testing::two_linked_nodes(rank_node, 0, tls);
    caf::scoped_actor owner{system};
    std::vector<caf::actor> shards;
    for (int r = 0; r < p; ++r) {
      auto& link = links[static_cast<std::size_t>(rank_node[static_cast<std::size_t>(r)])];
      shards.push_back(caf::actor_cast<caf::actor>(spawn_compressed_shard(system, shard_spec(3, r, p, n, mixed_segments()), link)));
      link->attach(3, r, caf::actor_cast<sync::shard_actor>(shards.back()));
    }
    testing::wire_across_nodes(owner, 3, shards, rank_node);
    Reference reference(p, n, mixed_segments());
    std::uint64_t crossing = 0;
    for (std::uint64_t it = 0; it < 3; ++it) {
      const Buffers inputs = testing::random_inputs(p, n, 7 + it);
      for (int r = 0; r < p; ++r)
        owner->send(shards[static_cast<std::size_t>(r)],
                    msg::GradientReady{3, it, msg::TensorPayload::copy_of(inputs[static_cast<std::size_t>(r)])});
      const auto expected = reference.step(inputs);
      // Ring 0 -> 1 -> 2 -> 0: the sends of ranks 0 and 1 cross nodes.
      crossing += reference.bytes_sent_by(0) + reference.bytes_sent_by(1);
      int got = 0;
      bool timed_out = false;
      owner->receive_while([&] { return got < p && !timed_out; })(
          [&](msg::Reduced& r) {
            REQUIRE(r.iteration == it);
            CHECK(same_bits(r.buffer.to_vector(), expected));
            ++got;
          },
          caf::after(std::chrono::seconds(10)) >> [&] { timed_out = true; });
      REQUIRE_MESSAGE(!timed_out, "only ", got, " of ", p, " ranks finished");
    }
    auto sent = [&] { return links[0]->plane().stats().bytes_sent + links[1]->plane().stats().bytes_sent; };
    for (int i = 0; i < 200 && sent() != crossing; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(sent() == crossing);
    CHECK(links[0]->plane().stats().tls_connections == (tls == transport::TlsMode::always ? 2u : 0u));
    for (auto& s : shards) owner->send_exit(s, caf::exit_reason::user_shutdown);
    for (auto& s : shards) owner->wait_for(s);
    for (auto& l : links) l->detach_all();
    }
  }
}

TEST_SUITE("data_parallel") {
  TEST_CASE("compression at density 1 with momentum correction follows dense momentum SGD") {
    TempDir dir;
    const auto dense = testing::run_training(load(dir, train_config(dir, "0.9", "")));
    const TrainReport dense_report = testing::net_report(dense);
    const auto& reference = dense.final_parameters;
    const double n = 864 + 24 + 96 + 4;
    CHECK(dense_report.bytes_sent_per_iteration == doctest::Approx(2 * 2 * 4 * n));  // ring: 2(P-1)·4n, all ranks
    CHECK(dense_report.dense_bytes_per_iteration == doctest::Approx(2 * 2 * 4 * n));
    // Every parameter through the compressor (min_elements = 0): top-k at
    // density 1 (the packed allgather; without masking, which at density 1
    // would zero the velocity every step), or method = dense (the buckets keep
    // their allreduce, behind each rank's momentum correction).
    // Third: ip1's bias dense next to its top-k weights, so that bucket's
    // dense segment goes by allreduce beside the allgather.
    for (const char* method : {"topk\ndensity = 1\nmomentum_masking = false", "dense",
                               "topk\ndensity = 1\nmomentum_masking = false\n[compress ip1/bias]\nmethod = dense"}) {
      CAPTURE(method);
      const auto sparse = testing::run_training(load(
          dir, train_config(dir, "0", std::string("[compress]\nmin_elements = 0\nmomentum = 0.9\nmethod = ") + method +
                                          "\n")));
      const TrainReport report = testing::net_report(sparse);
      const auto& params = sparse.final_parameters;
      REQUIRE(params.size() == 3);
      double worst = 0;
      for (std::size_t i = 0; i < params[0].size(); ++i)
        worst = std::max(worst, std::abs(double(params[0][i]) - reference[0][i]) / (1e-3 + std::abs(reference[0][i])));
      CHECK(worst < 1e-4);
      for (const auto& p : params) CHECK(p == params[0]);  // replicas agree bit for bit
      CHECK(report.dense_bytes_per_iteration == doctest::Approx(2 * 2 * 4 * n));
      const std::string json = report.to_json();
      CHECK(json.find("\"bytes_sent_per_iteration\"") != std::string::npos);
      CHECK(json.find("\"dense_bytes_per_iteration\"") != std::string::npos);
      if (std::string(method) == "dense") {
        CHECK(report.bytes_sent_per_iteration == doctest::Approx(2 * 2 * 4 * n));
        CHECK(json.find("compressed ring allgather") == std::string::npos);
      } else if (std::string(method).find("ip1/bias") == std::string::npos) {
        // P(P-1) messages of (nearly) every entry, index and value, and their headers.
        CHECK(report.bytes_sent_per_iteration > 3 * 2 * 6 * n);
        CHECK(report.bytes_sent_per_iteration < 3 * 2 * 8 * (n + 64));
        CHECK(json.find("compressed ring allgather") != std::string::npos);
      }
    }
  }

  TEST_CASE("sparse compression sends fewer bytes and still trains; method = none keeps allreduce") {
    TempDir dir;
    const TrainReport report = testing::net_report(testing::run_training(
        load(dir, train_config(dir, "0", "[compress]\nmethod = bsearch\ndensity = 0.05\nmin_elements = 500\nmomentum = 0.9\n"))));
    CHECK(report.bytes_sent_per_iteration < 0.5 * report.dense_bytes_per_iteration);
    CHECK(std::isfinite(report.train_loss));
    // The compressed shards' own work is measured (taihu-sim's compress_ and decompress_seconds).
    for (const auto& b : report.buckets) {
      if (b.algorithm.find("compressed") == std::string::npos) continue;
      CHECK(b.compress_seconds > 0.0);
      CHECK(b.decompress_seconds > 0.0);
      CHECK(b.done_seconds > b.ready_seconds);
    }
    const TrainReport off_report = testing::net_report(
        testing::run_training(load(dir, train_config(dir, "0.9", "[compress]\nmethod = none\nmomentum = 0.9\n"))));
    CHECK(off_report.to_json().find("compressed") == std::string::npos);
    CHECK(off_report.bytes_sent_per_iteration == doctest::Approx(off_report.dense_bytes_per_iteration));
  }

  TEST_CASE("compressor momentum needs solver momentum 0") {
    TempDir dir;
    try {
      testing::run_training(
          load(dir, train_config(dir, "0.9", "[compress]\nmethod = topk\ndensity = 0.1\nmomentum = 0.9\n")));
      FAIL("expected a config error");
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      CHECK_MESSAGE(what.find("momentum") != std::string::npos, what);
      CHECK_MESSAGE(what.find("must be 0 when [compress] momentum > 0") != std::string::npos, what);
    }
  }
}
