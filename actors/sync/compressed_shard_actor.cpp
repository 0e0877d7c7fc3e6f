#include "actors/sync/compressed_shard_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include "actors/sync/float_buffer.hpp"
#include "actors/sync/packed_slots.hpp"
#include "actors/sync/shard_skeleton.hpp"
#include "actors/sync/step_engine.hpp"
#include "core/common/check.hpp"
#include "core/compress/compressor_states.hpp"
#include "core/compress/packed.hpp"
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

// RedSync's reduction of one bucket: this rank's packed message gathered
// around the ring with every other rank's, the dense part (split buckets)
// allreduced beside it, and the sum of all messages written into the bucket.
class CompressedReduction {
 public:
  static constexpr const char* actor_name = "taihu.compressed_shard";

  CompressedReduction(std::shared_ptr<Setup> setup, const msg::PayloadAllocator* allocator)
      : setup_(std::move(setup)), allocator_(allocator) {
    const CompressedShardSpec& own = setup_->spec;
    // Built once: the slots' schedule depends on nothing an iteration decides (packed_slots.hpp).
    const std::size_t capacity = setup_->compressor->max_message_words();
    messages_ = PackedSlots(own.ranks, capacity);
    auto ring = PackedSlots::ring(own.ranks, capacity);
    allgather_ = StepEngine(own.bucket, own.rank, std::move(ring.steps[static_cast<std::size_t>(own.rank)]));
    allreduce_ = StepEngine(own.bucket, own.rank, std::move(setup_->spec.dense_steps), dense_seq_base);
    if (!setup_->dense_parts.empty()) sparse_scratch_.resize(setup_->sparse_elements);
    dense_ = FloatBuffer({}, allocator_);  // every send copies (see begin)
  }

  ShardId id() const { return {spec().bucket, spec().rank, spec().ranks, spec().elements}; }
  bool compresses() const { return true; }
  bool peers_optional(bool) const { return false; }

  // Compresses this rank's gradient into its message (and the dense part,
  // split buckets, into its own buffer) and starts both collectives.
  void begin(msg::GradientReady ready) {
    Setup& set = *setup_;
    buffer_ = std::move(ready.buffer);
    if (set.dense_parts.empty()) {
      set.compressor->compress(buffer_.span(), 1.0f, words_);
    } else {
      const float* in = buffer_.data();
      for (const Part& p : set.sparse_parts)
        std::memcpy(sparse_scratch_.data() + p.compact_offset, in + p.bucket_offset, p.count * sizeof(float));
      set.compressor->compress(sparse_scratch_, 1.0f, words_);
      // Sends copy their ranges, so the buffer is ours again after each iteration: reused.
      msg::TensorPayload dense = dense_.release();
      if (dense.size() != set.dense_elements || !dense.unique()) dense = msg::TensorPayload::allocate(set.dense_elements);
      dense_.bind(std::move(dense));
      float* d = dense_.data();
      for (const Part& p : set.dense_parts)
        std::memcpy(d + p.compact_offset, in + p.bucket_offset, p.count * sizeof(float));
      if (set.dense_compressor) {
        const std::span<float> corrected(d, set.dense_elements);
        set.dense_compressor->compress(corrected, 1.0f, dense_words_);
        std::fill(corrected.begin(), corrected.end(), 0.0f);
        compress::decompress_add(dense_words_, corrected);
      }
    }
    entries_sent_ += set.compressor->last_sent_entries();
    auto own = msg::TensorPayload::allocate(words_.size(), allocator_);
    std::memcpy(own.mutable_data(), words_.data(), words_.size() * sizeof(std::uint32_t));
    messages_.put(set.spec.rank, std::move(own));
    allgather_.start(ready.iteration);
    allreduce_.start(ready.iteration);
  }

  // Both collectives, each up to its first missing chunk.
  bool advance(ShardInbox& inbox, const SendChunk& send) {
    const bool gathered = allgather_.advance(inbox, messages_, send);
    const bool reduced = allreduce_.advance(inbox, dense_, send);
    return gathered && reduced;
  }

  // Adds every message, in rank order, into the sparse part; the bucket.
  msg::TensorPayload finish(std::uint64_t iteration) {
    const Setup& set = *setup_;
    const bool split = !set.dense_parts.empty();
    float* out = buffer_.mutable_data();
    const std::span<float> sum = split ? std::span<float>(sparse_scratch_) : std::span<float>(out, set.spec.elements);
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int r = 0; r < set.spec.ranks; ++r) {
      try {
        compress::decompress_add(messages_.message(r).span(), sum);
      } catch (const std::exception& e) {
        raise("compressed shard {}/{}: the packed message of rank {} in iteration {} is malformed: {}",
              set.spec.bucket, set.spec.rank, r, iteration, e.what());
      }
    }
    if (split) {
      for (const Part& p : set.sparse_parts)
        std::memcpy(out + p.bucket_offset, sum.data() + p.compact_offset, p.count * sizeof(float));
      for (const Part& p : set.dense_parts)
        std::memcpy(out + p.bucket_offset, dense_.data() + p.compact_offset, p.count * sizeof(float));
    }
    messages_.clear();
    return std::exchange(buffer_, {});
  }

  // A chunk no step takes would wait in the inbox for ever: refused now.
  bool arrives_early(const msg::Chunk& chunk, bool current) const {
    require(allgather_.expects(chunk) || allreduce_.expects(chunk),
            "compressed shard {}/{}: no step of this rank receives chunk {} from rank {}", spec().bucket,
            spec().rank, chunk.seq, chunk.sender);
    return !current;
  }

  msg::ShardStats stats(const ShardCounters& c) const {
    return msg::ShardStats{c.chunks_sent, c.early_chunks, 0, 0, c.bytes_sent, entries_sent_};
  }

  // Residuals and momentum: the sparse part's, then the dense part's.
  std::string states() const {
    auto states = setup_->compressor->state();
    if (setup_->dense_compressor)
      for (auto& d : setup_->dense_compressor->state()) states.push_back(std::move(d));
    return encode_states(states);
  }
  void restore(const std::string& bytes) {
    auto states = decode_states(bytes);
    const std::size_t sparse = setup_->compressor->segments();
    const std::size_t dense = setup_->dense_compressor ? setup_->dense_compressor->segments() : 0;
    require(states.size() == sparse + dense, "{} compressor states for {} segments", states.size(), sparse + dense);
    std::vector<compress::CompressorState> rest(std::make_move_iterator(states.begin() + static_cast<std::ptrdiff_t>(sparse)),
                                                std::make_move_iterator(states.end()));
    states.resize(sparse);
    setup_->compressor->restore(states);
    if (setup_->dense_compressor) setup_->dense_compressor->restore(rest);
  }

 private:
  const CompressedShardSpec& spec() const { return setup_->spec; }

  std::shared_ptr<Setup> setup_;  // this actor's only
  const msg::PayloadAllocator* allocator_ = nullptr;
  std::vector<std::uint32_t> words_, dense_words_;
  std::vector<float> sparse_scratch_;  // gather of the sparse part, then its sum (split buckets only)
  msg::TensorPayload buffer_;  // the gradient in, the sum out
  StepEngine allgather_;       // of the packed messages
  PackedSlots messages_;       // by origin rank
  StepEngine allreduce_;       // of the dense part (split buckets; else no steps)
  FloatBuffer dense_;          // the dense part, reduced in place
  std::uint64_t entries_sent_ = 0;
};

using Self = shard_actor::stateful_base<ShardCore<CompressedReduction>>;

shard_actor::behavior_type compressed_shard(Self* self, std::shared_ptr<Setup> setup,
                                            std::shared_ptr<ChunkRouter> router) {
  auto reduction = std::make_shared<CompressedReduction>(std::move(setup), router ? router->allocator() : nullptr);
  return shard_behavior(self, std::move(reduction), std::move(router), "compressed shard");
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
