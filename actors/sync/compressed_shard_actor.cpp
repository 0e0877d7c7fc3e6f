#include "actors/sync/compressed_shard_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "actors/exception_reason.hpp"
#include "core/common/check.hpp"
#include "core/compress/packed.hpp"
#include "messages/type_ids.hpp"

namespace taihu::sync {
namespace {

struct CompressedShardState {
  static inline const char* name = "taihu.compressed_shard";

  CompressedShardSpec spec;
  std::shared_ptr<ChunkRouter> router;  // null in-process
  std::shared_ptr<compress::BucketCompressor> compressor;  // owned here only
  std::vector<std::uint32_t> words;  // this rank's message, reused
  std::vector<caf::actor> peers;
  caf::actor owner;
  bool wired = false;

  // The running iteration, if any.
  bool running = false;
  std::uint64_t iteration = 0;
  msg::TensorPayload buffer;              // the gradient in, the sum out
  std::vector<msg::TensorPayload> messages;  // by origin rank
  int next_step = 0;
  bool step_sent = false;
  std::uint64_t iteration_bytes = 0;
  std::optional<std::uint64_t> last_completed;

  std::map<std::tuple<std::uint64_t, int, std::uint32_t>, msg::Chunk> arrived;  // (iteration, sender, seq)
  std::map<std::uint64_t, msg::GradientReady> queued;                          // by iteration

  std::uint64_t chunks_sent = 0;
  std::uint64_t early_chunks = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t entries_sent = 0;

  int left() const { return (spec.rank + spec.ranks - 1) % spec.ranks; }
  int right() const { return (spec.rank + 1) % spec.ranks; }
  // The origin whose message this rank sends in ring step s (it receives origin(s + 1)).
  int origin(int s) const { return ((spec.rank - s) % spec.ranks + spec.ranks) % spec.ranks; }
};

using Self = caf::stateful_actor<CompressedShardState>;

void start_next(Self* self);

// Adds every message, in rank order, into the gradient buffer; hands it back.
void finish(Self* self) {
  auto& s = self->state;
  float* dense = s.buffer.mutable_data();
  std::fill_n(dense, s.spec.elements, 0.0f);
  for (int r = 0; r < s.spec.ranks; ++r) {
    const auto& m = s.messages[static_cast<std::size_t>(r)];
    try {
      compress::decompress_add(m.span(), std::span<float>(dense, s.spec.elements));
    } catch (const std::exception& e) {
      raise("compressed shard {}/{}: the packed message of rank {} in iteration {} is malformed: {}", s.spec.bucket,
            s.spec.rank, r, s.iteration, e.what());
    }
  }
  s.running = false;
  s.last_completed = s.iteration;
  s.messages.assign(s.messages.size(), msg::TensorPayload{});
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  msg::Reduced reduced{s.spec.bucket, s.iteration, s.spec.rank, std::move(s.buffer),
                       std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), s.iteration_bytes};
  s.buffer = {};
  self->send(s.owner, std::move(reduced));
  start_next(self);
}

// Runs ring steps until one waits for a message that has not arrived.
void advance(Self* self) {
  auto& s = self->state;
  const int steps = s.spec.ranks - 1;
  while (s.next_step < steps) {
    if (!s.step_sent) {
      const int origin = s.origin(s.next_step);
      msg::Chunk chunk{s.spec.bucket, s.iteration, s.spec.rank, static_cast<std::uint32_t>(s.next_step),
                       static_cast<std::uint64_t>(origin), s.messages[static_cast<std::size_t>(origin)]};
      s.iteration_bytes += chunk.payload.size() * sizeof(float);
      s.bytes_sent += chunk.payload.size() * sizeof(float);
      if (s.router && s.router->remote(s.right())) {
        s.router->send(s.right(), std::move(chunk));
      } else {
        self->send(s.peers[static_cast<std::size_t>(s.right())], std::move(chunk));
      }
      ++s.chunks_sent;
      s.step_sent = true;
    }
    auto it = s.arrived.find({s.iteration, s.left(), static_cast<std::uint32_t>(s.next_step)});
    if (it == s.arrived.end()) return;
    const msg::Chunk& chunk = it->second;
    const int expected = s.origin(s.next_step + 1);
    require(chunk.offset == static_cast<std::uint64_t>(expected) && !chunk.payload.empty(),
            "compressed shard {}/{}: ring step {} from rank {} carries the message of rank {} ({} words), expected "
            "rank {}'s",
            s.spec.bucket, s.spec.rank, chunk.seq, chunk.sender, chunk.offset, chunk.payload.size(), expected);
    s.messages[static_cast<std::size_t>(expected)] = chunk.payload;
    s.arrived.erase(it);
    s.step_sent = false;
    ++s.next_step;
  }
  finish(self);
}

void start_next(Self* self) {
  auto& s = self->state;
  if (!s.wired || s.running || s.queued.empty()) return;
  auto node = s.queued.extract(s.queued.begin());
  msg::GradientReady& ready = node.mapped();
  s.running = true;
  s.iteration = ready.iteration;
  s.buffer = std::move(ready.buffer);
  s.compressor->compress(s.buffer.span(), 1.0f, s.words);
  s.entries_sent += s.compressor->last_sent_entries();
  auto own = msg::TensorPayload::allocate(s.words.size());
  std::memcpy(own.mutable_data(), s.words.data(), s.words.size() * sizeof(std::uint32_t));
  s.messages[static_cast<std::size_t>(s.spec.rank)] = std::move(own);
  s.next_step = 0;
  s.step_sent = false;
  s.iteration_bytes = 0;
  advance(self);
}

caf::behavior compressed_shard(Self* self, CompressedShardSpec spec, std::shared_ptr<compress::BucketCompressor> compressor,
                               std::shared_ptr<ChunkRouter> router) {
  auto& st = self->state;
  st.compressor = std::move(compressor);
  st.messages.resize(static_cast<std::size_t>(spec.ranks));
  st.spec = std::move(spec);
  st.router = std::move(router);
  self->set_exception_handler(exception_reason);
  return {
      [=](msg::ShardInit& init) {
        auto& s = self->state;
        require(!s.wired, "compressed shard {}/{}: wired twice", s.spec.bucket, s.spec.rank);
        require(init.bucket == s.spec.bucket && static_cast<int>(init.peers.size()) == s.spec.ranks,
                "compressed shard {}/{}: init for bucket {} with {} peers, expected {} peers", s.spec.bucket,
                s.spec.rank, init.bucket, init.peers.size(), s.spec.ranks);
        s.peers = std::move(init.peers);
        s.owner = std::move(init.owner);
        s.wired = true;
        start_next(self);
      },
      [=](msg::GradientReady& ready) {
        auto& s = self->state;
        require(ready.bucket == s.spec.bucket && ready.buffer.size() == s.spec.elements,
                "compressed shard {}/{}: gradients of bucket {} with {} floats, expected {}", s.spec.bucket,
                s.spec.rank, ready.bucket, ready.buffer.size(), s.spec.elements);
        require(!s.last_completed || ready.iteration > *s.last_completed,
                "compressed shard {}/{}: iteration {} is not after the completed {}", s.spec.bucket, s.spec.rank,
                ready.iteration, *s.last_completed);
        require(!(s.running && ready.iteration == s.iteration) && !s.queued.contains(ready.iteration),
                "compressed shard {}/{}: iteration {} started twice", s.spec.bucket, s.spec.rank, ready.iteration);
        s.queued.emplace(ready.iteration, std::move(ready));
        start_next(self);
      },
      [=](msg::Chunk& chunk) {
        auto& s = self->state;
        require(chunk.bucket == s.spec.bucket && chunk.sender == s.left() && s.spec.ranks > 1,
                "compressed shard {}/{}: chunk of bucket {} from rank {}; the ring's left neighbour is rank {}",
                s.spec.bucket, s.spec.rank, chunk.bucket, chunk.sender, s.left());
        require(chunk.seq + 1 < static_cast<std::uint32_t>(s.spec.ranks) &&
                    chunk.offset < static_cast<std::uint64_t>(s.spec.ranks),
                "compressed shard {}/{}: chunk {} from rank {} names origin rank {}; the ring has {} ranks",
                s.spec.bucket, s.spec.rank, chunk.seq, chunk.sender, chunk.offset, s.spec.ranks);
        require(!s.last_completed || chunk.iteration > *s.last_completed,
                "compressed shard {}/{}: chunk {} from rank {} of iteration {}, already completed {}", s.spec.bucket,
                s.spec.rank, chunk.seq, chunk.sender, chunk.iteration, *s.last_completed);
        const bool current = s.running && chunk.iteration == s.iteration;
        if (!current || static_cast<std::uint32_t>(s.next_step) != chunk.seq) ++s.early_chunks;
        const auto key = std::tuple{chunk.iteration, static_cast<int>(chunk.sender), chunk.seq};
        const bool fresh = s.arrived.emplace(key, std::move(chunk)).second;
        require(fresh, "compressed shard {}/{}: chunk {} from rank {} of iteration {} arrived twice", s.spec.bucket,
                s.spec.rank, std::get<2>(key), std::get<1>(key), std::get<0>(key));
        if (current) advance(self);
      },
      [=](msg::stats_atom) {
        const auto& s = self->state;
        return caf::make_message(s.chunks_sent, s.early_chunks, s.bytes_sent, s.entries_sent);
      },
  };
}

}  // namespace

caf::actor spawn_compressed_shard(caf::actor_system& system, CompressedShardSpec spec,
                                  std::shared_ptr<ChunkRouter> router) {
  require(spec.ranks >= 1 && spec.rank >= 0 && spec.rank < spec.ranks,
          "spawn_compressed_shard: rank {} of {} ranks", spec.rank, spec.ranks);
  for (auto& segment : spec.segments) segment.options.workers = spec.ranks;
  // Built here, so that segments that do not tile the bucket throw to the caller.
  auto compressor = std::make_shared<compress::BucketCompressor>(spec.elements, spec.segments);
  return system.spawn(compressed_shard, std::move(spec), std::move(compressor), std::move(router));
}

}  // namespace taihu::sync
