#include "actors/sync/compressed_shard_actor.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "actors/exception_reason.hpp"
#include "actors/sync/chunk_poller.hpp"
#include "actors/sync/float_buffer.hpp"
#include "actors/sync/packed_slots.hpp"
#include "actors/sync/send_chunk.hpp"
#include "actors/sync/shard_inbox.hpp"
#include "actors/sync/step_engine.hpp"
#include "core/common/check.hpp"
#include "core/compress/packed.hpp"
#include "core/compress/compressor_states.hpp"
#include "messages/type_ids.hpp"

namespace taihu::sync {
namespace {

// A bucket range and where it sits in the compact sparse or dense buffer.
struct Part {
  std::size_t bucket_offset = 0;
  std::size_t compact_offset = 0;
  std::size_t count = 0;
};

// What the actor is given: the split of the bucket and the compressors.
struct Setup {
  CompressedShardSpec spec;
  std::vector<Part> sparse_parts, dense_parts;  // dense_parts empty: no split
  std::size_t sparse_elements = 0, dense_elements = 0;
  std::unique_ptr<compress::BucketCompressor> compressor;        // over the sparse part (or all)
  std::unique_ptr<compress::BucketCompressor> dense_compressor;  // momentum / clipping of the dense part, or null
};

struct CompressedShardState {
  static inline const char* name = "taihu.compressed_shard";

  std::shared_ptr<Setup> setup;  // owned by this actor only
  std::shared_ptr<ChunkRouter> router;  // null in-process
  const msg::PayloadAllocator* allocator() const { return router ? router->allocator() : nullptr; }
  ChunkPoller poller;                   // after `router`: gives its hold back before the router goes
  std::vector<std::uint32_t> words, dense_words;
  std::vector<float> sparse_scratch;  // gather of the sparse part, then its sum (split buckets only)

  // The running iteration, if any.
  bool running = false;
  std::uint64_t iteration = 0;
  msg::TensorPayload buffer;  // the gradient in, the sum out
  StepEngine allgather;       // of the packed messages
  PackedSlots messages;       // by origin rank
  StepEngine allreduce;       // of the dense part (split buckets; else no steps)
  FloatBuffer dense;          // the dense part, reduced in place
  std::uint64_t iteration_bytes = 0;

  ShardInbox inbox;  // inputs and early chunks

  std::uint64_t chunks_sent = 0;
  std::uint64_t early_chunks = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t entries_sent = 0;

  const CompressedShardSpec& spec() const { return setup->spec; }
};

using Self = shard_actor::stateful_base<CompressedShardState>;

void start_next(Self* self);

// Adds every message, in rank order, into the sparse part; hands the bucket back.
void finish(Self* self) {
  auto& s = self->state;
  const Setup& set = *s.setup;
  const bool split = !set.dense_parts.empty();
  float* out = s.buffer.mutable_data();
  const std::span<float> sum = split ? std::span<float>(s.sparse_scratch) : std::span<float>(out, set.spec.elements);
  std::fill(sum.begin(), sum.end(), 0.0f);
  for (int r = 0; r < set.spec.ranks; ++r) {
    try {
      compress::decompress_add(s.messages.message(r).span(), sum);
    } catch (const std::exception& e) {
      raise("compressed shard {}/{}: the packed message of rank {} in iteration {} is malformed: {}", set.spec.bucket,
            set.spec.rank, r, s.iteration, e.what());
    }
  }
  if (split) {
    for (const Part& p : set.sparse_parts)
      std::memcpy(out + p.bucket_offset, sum.data() + p.compact_offset, p.count * sizeof(float));
    for (const Part& p : set.dense_parts)
      std::memcpy(out + p.bucket_offset, s.dense.data() + p.compact_offset, p.count * sizeof(float));
  }
  s.poller.release();
  s.running = false;
  s.inbox.complete(s.iteration);
  s.messages.clear();
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  msg::Reduced reduced{set.spec.bucket, s.iteration, set.spec.rank, std::move(s.buffer),
                       std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), s.iteration_bytes};
  s.buffer = {};
  self->send(s.inbox.owner(), std::move(reduced));
  start_next(self);
}

// Both collectives, each up to its first missing chunk.
void advance(Self* self) {
  auto& s = self->state;
  auto post = [self](int to, msg::Chunk chunk) {
    auto& s = self->state;
    s.iteration_bytes += chunk.size() * sizeof(float);
    s.bytes_sent += chunk.size() * sizeof(float);
    ++s.chunks_sent;
    send_chunk(self, s.router.get(), s.inbox, to, std::move(chunk));
  };
  const bool gathered = s.allgather.advance(s.inbox, s.messages, post);
  const bool reduced = s.allreduce.advance(s.inbox, s.dense, post);
  if (gathered && reduced) {
    finish(self);
  } else if (s.poller.wait()) {
    self->send(self, msg::poll_atom_v);  // look for the missing chunk rather than sleep
  }
}

void start_next(Self* self) {
  auto& s = self->state;
  if (!s.inbox.wired() || s.running || !s.inbox.has_input()) return;
  Setup& set = *s.setup;
  msg::GradientReady ready = s.inbox.next_input();
  s.running = true;
  s.iteration = ready.iteration;
  s.buffer = std::move(ready.buffer);
  s.iteration_bytes = 0;
  if (set.dense_parts.empty()) {
    set.compressor->compress(s.buffer.span(), 1.0f, s.words);
  } else {
    const float* in = s.buffer.data();
    for (const Part& p : set.sparse_parts)
      std::memcpy(s.sparse_scratch.data() + p.compact_offset, in + p.bucket_offset, p.count * sizeof(float));
    set.compressor->compress(s.sparse_scratch, 1.0f, s.words);
    // Sends copy their ranges, so the buffer is ours again after each iteration: reused.
    msg::TensorPayload dense = s.dense.release();
    if (dense.size() != set.dense_elements || !dense.unique()) dense = msg::TensorPayload::allocate(set.dense_elements);
    s.dense.bind(std::move(dense));
    float* d = s.dense.data();
    for (const Part& p : set.dense_parts)
      std::memcpy(d + p.compact_offset, in + p.bucket_offset, p.count * sizeof(float));
    if (set.dense_compressor) {
      const std::span<float> corrected(d, set.dense_elements);
      set.dense_compressor->compress(corrected, 1.0f, s.dense_words);
      std::fill(corrected.begin(), corrected.end(), 0.0f);
      compress::decompress_add(s.dense_words, corrected);
    }
  }
  s.entries_sent += set.compressor->last_sent_entries();
  auto own = msg::TensorPayload::allocate(s.words.size(), s.allocator());
  std::memcpy(own.mutable_data(), s.words.data(), s.words.size() * sizeof(std::uint32_t));
  s.messages.put(set.spec.rank, std::move(own));
  s.allgather.start(s.iteration);
  s.allreduce.start(s.iteration);
  advance(self);
}

shard_actor::behavior_type compressed_shard(Self* self, std::shared_ptr<Setup> setup, std::shared_ptr<ChunkRouter> router) {
  auto& st = self->state;
  const CompressedShardSpec& own = setup->spec;
  // Built once: the slots' schedule depends on nothing an iteration decides (packed_slots.hpp).
  const std::size_t capacity = setup->compressor->max_message_words();
  st.messages = PackedSlots(own.ranks, capacity);
  auto ring = PackedSlots::ring(own.ranks, capacity);
  st.allgather = StepEngine(own.bucket, own.rank, std::move(ring.steps[static_cast<std::size_t>(own.rank)]));
  st.allreduce = StepEngine(own.bucket, own.rank, std::move(setup->spec.dense_steps), dense_seq_base);
  if (!setup->dense_parts.empty()) st.sparse_scratch.resize(setup->sparse_elements);
  st.router = std::move(router);
  st.dense = FloatBuffer({}, st.allocator());  // every send copies (see start_next)
  st.setup = std::move(setup);
  st.poller.attach(st.router.get());
  st.inbox.init(fmt::format("compressed shard {}/{}", own.bucket, own.rank), own.bucket, own.elements, own.ranks);
  self->set_exception_handler(exception_reason);
  return {
      [=](msg::ShardInit& init) {
        self->state.inbox.wire(std::move(init), false);
        start_next(self);
      },
      [=](msg::GradientReady& ready) {
        auto& s = self->state;
        s.inbox.queue(std::move(ready), s.running ? std::optional{s.iteration} : std::nullopt);
        start_next(self);
      },
      [=](msg::Chunk& chunk) {
        auto& s = self->state;
        // A chunk no step takes would wait in the inbox for ever: refuse it now.
        require(s.allgather.expects(chunk) || s.allreduce.expects(chunk),
                "compressed shard {}/{}: no step of this rank receives chunk {} from rank {}",
                s.spec().bucket, s.spec().rank, chunk.seq, chunk.sender);
        const bool current = s.running && chunk.iteration == s.iteration;
        if (!current) ++s.early_chunks;
        s.inbox.keep(std::move(chunk));
        if (current) advance(self);
      },
      [=](msg::poll_atom) {
        if (self->state.poller.poll(self->state.running)) self->send(self, msg::poll_atom_v);
      },
      [=](msg::stats_atom) {
        const auto& s = self->state;
        return msg::ShardStats{s.chunks_sent, s.early_chunks, 0, 0, s.bytes_sent, s.entries_sent};
      },
      // Residuals and momentum, for checkpoints: the sparse part's, then the dense part's.
      [=](msg::compressor_atom) {
        const Setup& setup = *self->state.setup;
        auto states = setup.compressor->state();
        if (setup.dense_compressor)
          for (auto& d : setup.dense_compressor->state()) states.push_back(std::move(d));
        return encode_states(states);
      },
      [=](msg::compressor_atom, const std::string& bytes) {
        auto& s = self->state;
        require(!s.running && !s.inbox.has_input(), "compressed shard {}/{}: compressor state restored mid-iteration",
                s.spec().bucket, s.spec().rank);
        // States of another layout (e.g. after a regroup that re-planned the
        // compression): the shard goes on from where it is, and says so.
        try {
          auto states = decode_states(bytes);
          const std::size_t sparse = s.setup->compressor->segments();
          const std::size_t dense = s.setup->dense_compressor ? s.setup->dense_compressor->segments() : 0;
          require(states.size() == sparse + dense, "{} compressor states for {} segments", states.size(),
                  sparse + dense);
          std::vector<compress::CompressorState> rest(
              std::make_move_iterator(states.begin() + static_cast<std::ptrdiff_t>(sparse)),
              std::make_move_iterator(states.end()));
          states.resize(sparse);
          s.setup->compressor->restore(states);
          if (s.setup->dense_compressor) s.setup->dense_compressor->restore(rest);
        } catch (const Error& e) {
          spdlog::warn("{}: compressor state not restored: {}", s.inbox.name(), e.what());
          return false;
        }
        return true;
      },
  };
}

// Splits the segments into the packed part and, with dense_steps, the allreduced dense part.
std::shared_ptr<Setup> make_setup(CompressedShardSpec spec) {
  auto set = std::make_shared<Setup>();
  for (auto& segment : spec.segments) segment.options.workers = spec.ranks;
  std::vector<compress::Segment> sparse, dense;
  if (spec.split_dense) {
    for (const auto& segment : spec.segments) {
      const bool is_dense = segment.options.method == compress::Method::dense;
      auto& parts = is_dense ? set->dense_parts : set->sparse_parts;
      auto& compact = is_dense ? dense : sparse;
      std::size_t& at = is_dense ? set->dense_elements : set->sparse_elements;
      parts.push_back(Part{segment.offset, at, segment.count});
      compress::Segment rebased = segment;
      rebased.offset = at;
      compact.push_back(rebased);
      at += segment.count;
    }
    require(!sparse.empty() && !dense.empty(),
            "spawn_compressed_shard: splitting bucket {} needs both sparse and dense segments", spec.bucket);
    for (const collectives::Step& step : spec.dense_steps)
      require(step.send.end() <= set->dense_elements && step.recv.end() <= set->dense_elements,
              "spawn_compressed_shard: a dense step of bucket {} reaches past its {} dense floats", spec.bucket,
              set->dense_elements);
    bool corrected = false;
    for (const auto& segment : dense) corrected = corrected || segment.options.momentum > 0 || segment.options.clip_norm > 0;
    if (corrected) set->dense_compressor = std::make_unique<compress::BucketCompressor>(set->dense_elements, dense);
  } else {
    sparse = spec.segments;
    set->sparse_elements = spec.elements;
  }
  // The BucketCompressors check that the segments tile their range.
  set->compressor = std::make_unique<compress::BucketCompressor>(set->sparse_elements, sparse);
  if (spec.split_dense) {
    std::size_t total = set->sparse_elements + set->dense_elements;
    require(total == spec.elements, "spawn_compressed_shard: segments cover {} of bucket {}'s {} floats", total,
            spec.bucket, spec.elements);
  }
  set->spec = std::move(spec);
  return set;
}

}  // namespace

shard_actor spawn_compressed_shard(caf::actor_system& system, CompressedShardSpec spec,
                                  std::shared_ptr<ChunkRouter> router) {
  require(spec.ranks >= 1 && spec.rank >= 0 && spec.rank < spec.ranks,
          "spawn_compressed_shard: rank {} of {} ranks", spec.rank, spec.ranks);
  // Built here, so that a bad split or segments that do not tile the bucket throw to the caller.
  return system.spawn(compressed_shard, make_setup(std::move(spec)), std::move(router));
}

}  // namespace taihu::sync
