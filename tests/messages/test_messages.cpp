#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "messages/type_ids.hpp"
#include "support/actor_fixture.hpp"
#include "support/shard_wiring.hpp"

using namespace taihu;
using namespace taihu::msg;

namespace {

msg::TensorPayload iota_payload(std::size_t n, float start = 0.5f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return TensorPayload::copy_of(v);
}

std::vector<char> serialize(caf::actor_system& system, auto& value) {
  std::vector<char> bytes;
  caf::binary_serializer sink{system, bytes};
  auto err = sink(value);
  REQUIRE_MESSAGE(!err, system.render(err));
  return bytes;
}

template <class T>
T deserialize(caf::actor_system& system, const std::vector<char>& bytes) {
  T value;
  caf::binary_deserializer source{system, bytes};
  auto err = source(value);
  REQUIRE_MESSAGE(!err, system.render(err));
  CHECK(source.remaining() == 0);
  return value;
}

template <class T>
T round_trip(caf::actor_system& system, T value) {
  return deserialize<T>(system, serialize(system, value));
}

// The raw path writes the floats in host byte order, as one block; CAF's
// element-wise default would write them big-endian.
bool contains_host_bytes(const std::vector<char>& bytes, const TensorPayload& p) {
  const auto* first = reinterpret_cast<const char*>(p.data());
  const auto* last = first + p.size() * sizeof(float);
  return std::search(bytes.begin(), bytes.end(), first, last) != bytes.end();
}

}  // namespace

TEST_SUITE("messages") {
  TEST_CASE("tensor payload: slices share the buffer, writes copy unless unique") {
    auto a = iota_payload(10);
    CHECK(a.unique());
    auto b = a.slice(2, 5);
    CHECK(b.size() == 5);
    CHECK(b.data() == a.data() + 2);  // no copy
    CHECK(b[0] == 2.5f);
    CHECK_FALSE(a.unique());
    float* w = b.mutable_data();  // shared: copy on write
    CHECK(w != a.data() + 2);
    w[0] = -1.0f;
    CHECK(a[2] == 2.5f);
    CHECK(b[0] == -1.0f);
    CHECK(a.unique());
    CHECK(a.mutable_data() == a.data());  // unique: in place
    CHECK_THROWS(a.slice(8, 3));
    CHECK(a.slice(10, 0).empty());
    CHECK(TensorPayload{}.mutable_data() == nullptr);
    CHECK(iota_payload(4) == iota_payload(4));
    CHECK_FALSE(iota_payload(4) == iota_payload(4, 1.0f));
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "tensor payload: raw round trip of a view") {
    const auto whole = iota_payload(1000);
    auto view = whole.slice(100, 300);
    const auto bytes = serialize(system, view);
    CHECK(contains_host_bytes(bytes, view));
    CHECK(bytes.size() < 300 * sizeof(float) + 16);  // the view only, not the buffer
    const auto back = deserialize<TensorPayload>(system, bytes);
    CHECK(back == view);
    CHECK(back.unique());
    CHECK(round_trip(system, TensorPayload{}).empty());
    // Truncated input: an error, not a read past the end or a huge allocation.
    for (std::size_t keep : {std::size_t{0}, std::size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
      CAPTURE(keep);
      TensorPayload broken;
      const std::vector<char> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
      caf::binary_deserializer source{system, truncated};
      CHECK(source(broken));
    }
    {  // a corrupt length of 2^31 floats (8 GiB) fails before allocating
      std::vector<char> corrupt;
      caf::binary_serializer sink{system, corrupt};
      std::size_t huge = std::size_t{1} << 31;
      REQUIRE(!sink.begin_sequence(huge));
      corrupt.resize(corrupt.size() + 64, 0);
      TensorPayload broken;
      caf::binary_deserializer source{system, corrupt};
      const auto err = source(broken);
      CHECK_MESSAGE(err == caf::sec::end_of_stream, system.render(err));
    }
    CHECK(round_trip(system, iota_payload(1)) == iota_payload(1));
    CHECK(caf::deep_to_string(iota_payload(2)).find("1.5") != std::string::npos);
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "every message type survives a binary round trip") {
    Chunk chunk{3, 17, 5, 2, 4096, iota_payload(777).slice(7, 700), nullptr};
    const auto chunk_bytes = serialize(system, chunk);
    CHECK(contains_host_bytes(chunk_bytes, chunk.payload));
    const auto c = deserialize<Chunk>(system, chunk_bytes);
    CHECK(c.bucket == 3);
    CHECK(c.iteration == 17);
    CHECK(c.sender == 5);
    CHECK(c.seq == 2);
    CHECK(c.offset == 4096);
    CHECK(c.payload == chunk.payload);

    const auto g = round_trip(system, GradientReady{1, 9, iota_payload(50)});
    CHECK(g.bucket == 1);
    CHECK(g.iteration == 9);
    CHECK(g.buffer == iota_payload(50));

    const auto r = round_trip(system, Reduced{2, 8, 3, iota_payload(5)});
    CHECK(r.bucket == 2);
    CHECK(r.iteration == 8);
    CHECK(r.rank == 3);
    CHECK(r.buffer == iota_payload(5));
    Reduced with_bytes{2, 8, 3, iota_payload(5), 77, 123456789012ull};
    CHECK(round_trip(system, with_bytes).bytes_sent == 123456789012ull);
    const auto with_cpu = round_trip(system, Reduced{2, 8, 3, iota_payload(5), 77, 1, 250000, 7000000000});
    CHECK(with_cpu.compress_cpu_ns == 250000);
    CHECK(with_cpu.decompress_cpu_ns == 7000000000);

    CHECK(round_trip(system, Iterate{123456789012ull}).iteration == 123456789012ull);

    IterationStats stats;
    stats.forward_seconds = 0.5;
    stats.backward_seconds = 1.25;
    stats.update_seconds = 0.125;
    stats.exposed_comm_seconds = 0.0625;
    stats.samples = 64;
    stats.buckets = {{0.75, 1.0, 0.125, 0.25, 0.5}, {0.5, 2.5, 0, 0, 0}, {1.5, 1.75, 0.0625, 0.03125, 0.75}};
    IterationDone done{41, 2, 0.625f, stats};
    const auto d = round_trip(system, done);
    CHECK(d.iteration == 41);
    CHECK(d.rank == 2);
    CHECK(d.loss == 0.625f);
    CHECK(d.stats.forward_seconds == 0.5);
    CHECK(d.stats.backward_seconds == 1.25);
    CHECK(d.stats.update_seconds == 0.125);
    CHECK(d.stats.exposed_comm_seconds == 0.0625);
    CHECK(d.stats.samples == 64);
    REQUIRE(d.stats.buckets.size() == 3);
    for (std::size_t b = 0; b < 3; ++b) {
      CHECK(d.stats.buckets[b].ready == stats.buckets[b].ready);
      CHECK(d.stats.buckets[b].done == stats.buckets[b].done);
      CHECK(d.stats.buckets[b].compress_cpu == stats.buckets[b].compress_cpu);
      CHECK(d.stats.buckets[b].decompress_cpu == stats.buckets[b].decompress_cpu);
      CHECK(d.stats.buckets[b].unpack_cpu == stats.buckets[b].unpack_cpu);
    }
    const BucketTiming slow = slowest(stats.buckets[0], stats.buckets[2]);
    CHECK(slow.ready == 1.5);
    CHECK(slow.done == 1.75);
    CHECK(slow.compress_cpu == 0.125);
    CHECK(slow.decompress_cpu == 0.25);
    CHECK(slow.unpack_cpu == 0.75);
    IterationStats counts;
    counts.samples = 5;
    counts.vertices = 6;
    CHECK(round_trip(system, counts).samples == 5);
    CHECK(round_trip(system, counts).vertices == 6);
    IterationStats with_bytes_stats;
    with_bytes_stats.bytes_sent = 987654321;
    CHECK(round_trip(system, with_bytes_stats).bytes_sent == 987654321u);
    with_bytes_stats.learning_rate = 0.375f;
    CHECK(round_trip(system, with_bytes_stats).learning_rate == 0.375f);
    // What the coordinator asks of a replica, and what it answers.
    const auto save = round_trip(system, SaveCheckpoint{"out/run.ckpt", true, true, 2, 7, 12.5, 3.25});
    CHECK(save.path == "out/run.ckpt");
    CHECK(save.keep_all);
    CHECK(save.previous_sane);
    CHECK(save.batch == 7);
    CHECK(save.epoch_loss_sum == 3.25);
    CHECK(round_trip(system, SaveCompressorState{"x.ckpt", 42}).iteration == 42);
    CHECK(round_trip(system, SaveCompressorState{"x.ckpt", 42, true}).previous_sane);
    CHECK(round_trip(system, RunEnded{false, "node 1 was lost"}).reason == "node 1 was lost");
    const auto restore = round_trip(system, RestoreCheckpoint{"\x01bytes", "", "'a.ckpt'", true, 3, 9});
    CHECK(restore.bytes == "\x01bytes");
    CHECK(restore.reposition);
    CHECK(restore.batch == 9);
    const auto probe = round_trip(system, WorkerProbe{5, true, 2});
    CHECK(probe.in_iteration);
    CHECK(probe.buckets_pending == 2);
    ReplicaFigures figures;
    figures.runner = "actors";
    figures.executor.rounds = 17;
    figures.device.device = "sw26010";
    figures.device.layers.push_back({"conv1", "Convolution", "implicit", true, 0.5, 0.25, 0.125});
    const auto f = round_trip(system, figures);
    CHECK(f.runner == "actors");
    CHECK(f.executor.rounds == 17);
    CHECK(f.device.layers.at(0).method == "implicit");
    CHECK(f.device.layers.at(0).weight_gradient_seconds == 0.125);
    // A replica's evaluation answers eval_atom as the core type.
    const auto evaluation = round_trip(system, ReplicaEvaluation{true, {1, 0.5, 0.25, 2.7}, {2, 0.75, 0.5, 7.4}});
    CHECK(evaluation.has_dev);
    CHECK(evaluation.dev.root_accuracy == 0.25);
    CHECK(evaluation.test.perplexity == 7.4);
    // A NaN or infinite loss survives the wire (CAF's float encoding would not keep it).
    CHECK(std::isnan(round_trip(system, IterationDone{1, 0, std::numeric_limits<float>::quiet_NaN(), {}}).loss));
    CHECK(round_trip(system, IterationDone{1, 0, -std::numeric_limits<float>::infinity(), {}}).loss ==
          -std::numeric_limits<float>::infinity());

    // The cluster's control messages (actor handles are covered below).
    const auto setup =
        round_trip(system, ClusterSetup{4, 2, 3, "epochs = 1\n", {0, 1, 2}, {"ring", "hierarchical"}, {}});
    CHECK(setup.generation == 4);
    CHECK(setup.node == 2);
    CHECK(setup.nodes == 3);
    CHECK(setup.config == "epochs = 1\n");
    CHECK(setup.rank_node == std::vector<std::int32_t>{0, 1, 2});
    CHECK(setup.algorithms == std::vector<std::string>{"ring", "hierarchical"});
    const auto ready = round_trip(system, NodeReady{1, "127.0.0.1", 40123});
    CHECK(ready.node == 1);
    CHECK(ready.data_host == "127.0.0.1");
    CHECK(ready.data_port == 40123);
    const auto peers = round_trip(system, ClusterPeers{{"a", "b"}, {1, 65535}});
    CHECK(peers.hosts == std::vector<std::string>{"a", "b"});
    CHECK(peers.ports == std::vector<std::uint16_t>{1, 65535});
    const auto failure = round_trip(system, NodeFailure{7, 2, 5, "gone"});
    CHECK(failure.generation == 7);
    CHECK(failure.node == 2);
    CHECK(failure.rank == 5);
    CHECK(failure.reason == "gone");
    const auto join = round_trip(system, JoinRequest{"n1", {}, "0.1.0 (git 1a2b3c4d5e)"});
    CHECK(join.name == "n1");
    CHECK(join.build == "0.1.0 (git 1a2b3c4d5e)");

    const auto p = round_trip(system, Parameters{7, 0, iota_payload(100003), {{"forward a", false}, {"data b", true}}});
    CHECK(p.version == 7);
    CHECK(p.source == 0);
    CHECK(p.values == iota_payload(100003));
    REQUIRE(p.kernel_choices.size() == 2);
    CHECK(p.kernel_choices[0].key == "forward a");
    CHECK(!p.kernel_choices[0].dnnl);
    CHECK(p.kernel_choices[1].key == "data b");
    CHECK(p.kernel_choices[1].dnnl);

    // Local actor handles come back as the same actors.
    auto a = system.spawn([] { return caf::behavior{[](int) {}}; });
    auto b = system.spawn([] { return caf::behavior{[](int) {}}; });
    // The cluster protocol's typed handles keep their actor and their interface.
    auto coordinator = system.spawn([]() -> failure_listener::behavior_type { return {[](NodeFailure&) {}}; });
    CHECK(round_trip(system, ClusterSetup{1, 0, 1, "", {0}, {}, coordinator}).coordinator == coordinator);
    const failure_listener none;
    CHECK(round_trip(system, ClusterSetup{}).coordinator == none);
    caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);

    const auto init = round_trip(system, testing::shard_init(4, {a, b, a}, b));
    CHECK(init.bucket == 4);
    REQUIRE(init.peers.size() == 3);
    CHECK(init.peers[0].address() == a.address());
    CHECK(init.peers[1].address() == b.address());
    CHECK(init.peers[2].address() == a.address());
    CHECK(init.owner.address() == b.address());
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "every type of the block is registered by name") {
    const auto names = registered_type_names();
    CHECK(names.size() == caf::id_block::taihu::end - caf::id_block::taihu::begin);
    for (const char* name : {"taihu::msg::Chunk", "taihu::msg::IterationDone", "taihu::msg::RunVertexPart",
                             "taihu::msg::RunGraphBatch", "taihu::msg::WeightGradientsWritten", "taihu::msg::ShardStats"})
      CHECK(std::find(names.begin(), names.end(), name) != names.end());
    CHECK(missing_message_types(system).empty());
    // A system without the block misses every one of them.
    caf::actor_system_config bare;
    bare.set("scheduler.max-threads", 1);
    caf::actor_system other{bare};
    CHECK(missing_message_types(other).size() == names.size());
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "a local send moves the payload without copying floats") {
    const auto payload = iota_payload(1 << 16);
    const float* address = payload.data();
    caf::scoped_actor self{system};
    self->send(self, Chunk{0, 0, 0, 0, 0, payload, nullptr});
    self->receive([&](const Chunk& c) { CHECK(c.payload.data() == address); },
                  caf::after(std::chrono::seconds(5)) >> [] { FAIL("no message"); });
  }
}
