#include "actors/sync/shard_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <span>

#include "actors/sync/float_buffer.hpp"
#include "actors/sync/shard_skeleton.hpp"
#include "actors/sync/step_engine.hpp"
#include "collectives/zero_copy.hpp"
#include "core/common/check.hpp"
#include "core/compress/compressor_states.hpp"
#include "core/compress/packed.hpp"
#include "messages/type_ids.hpp"

namespace taihu::sync {
namespace {

// The allreduce of one bucket by its rank's steps of a schedule, in place in
// the rank's own buffer; optionally behind a precompressor that sends every
// segment dense (momentum correction, clipping).
class PlainReduction {
 public:
  static constexpr const char* actor_name = "taihu.shard";

  PlainReduction(ShardSpec spec, const msg::PayloadAllocator* allocator)
      : engine_(spec.bucket, spec.rank, std::move(spec.steps)),
        buffer_(std::move(spec.send_view), allocator, spec.sizes_only),
        id_{spec.bucket, spec.rank, spec.ranks, spec.elements},
        precompress_(std::move(spec.precompress)) {}

  ShardId id() const { return id_; }
  bool compresses() const { return precompress_ != nullptr; }
  // No peers at all is fine when a router takes every chunk (the network
  // simulator, actors/sim/: P shards x P handles would not fit at 40,960 ranks).
  bool peers_optional(bool routed) const { return routed; }

  void begin(msg::GradientReady ready) {
    if (buffer_.bind(std::move(ready.buffer))) ++buffer_copies_;
    if (precompress_) {
      // Dense segments only: the message is the corrected gradient; write it back in place.
      const std::span<float> dense(buffer_.data(), id_.elements);
      precompress_->compress(dense, 1.0f, words_);
      std::fill(dense.begin(), dense.end(), 0.0f);
      compress::decompress_add(words_, dense);
    }
    engine_.start(ready.iteration);
  }
  bool advance(ShardInbox& inbox, const SendChunk& send) { return engine_.advance(inbox, buffer_, send); }
  msg::TensorPayload finish(std::uint64_t) { return buffer_.release(); }

  bool arrives_early(const msg::Chunk& chunk, bool current) const { return !current || !engine_.awaits(chunk); }

  msg::ShardStats stats(const ShardCounters& c) const {
    return msg::ShardStats{c.chunks_sent, c.early_chunks, buffer_copies_, buffer_.copied_floats(), 0, 0};
  }
  std::string states() const { return precompress_ ? encode_states(precompress_->state()) : std::string{}; }
  void restore(const std::string& bytes) { precompress_->restore(decode_states(bytes)); }

 private:
  StepEngine engine_;  // this rank's steps
  FloatBuffer buffer_;  // the gradient in, the sum out
  ShardId id_;
  std::shared_ptr<compress::BucketCompressor> precompress_;
  std::vector<std::uint32_t> words_;  // precompress's message
  std::uint64_t buffer_copies_ = 0;   // GradientReady buffers that were shared, so copied
};

using Self = shard_actor::stateful_base<ShardCore<PlainReduction>>;

shard_actor::behavior_type shard(Self* self, ShardSpec spec, std::shared_ptr<ChunkRouter> router) {
  auto reduction = std::make_shared<PlainReduction>(std::move(spec), router ? router->allocator() : nullptr);
  return shard_behavior(self, std::move(reduction), std::move(router), "shard");
}

}  // namespace

std::vector<ShardSpec> shard_specs(const collectives::Schedule& schedule, std::uint32_t bucket, SendMode mode) {
  std::vector<ShardSpec> specs;
  for (int r = 0; r < schedule.ranks; ++r) {
    const auto& steps = schedule.steps[static_cast<std::size_t>(r)];
    specs.push_back(ShardSpec{bucket, r, schedule.ranks, schedule.elements, steps,
                              std::vector<std::uint8_t>(steps.size(), mode == SendMode::view_where_safe), nullptr});
  }
  if (mode == SendMode::view_where_safe) {
    for (const collectives::SendRef& unsafe : collectives::analyse_zero_copy(schedule).overwritten) {
      specs[static_cast<std::size_t>(unsafe.rank)].send_view[unsafe.step] = 0;
    }
  }
  return specs;
}

std::vector<msg::chunk_receiver> as_peers(const std::vector<shard_actor>& shards) {
  return {shards.begin(), shards.end()};
}

shard_actor spawn_shard(caf::actor_system& system, ShardSpec spec, std::shared_ptr<ChunkRouter> router) {
  require(spec.send_view.size() == spec.steps.size(), "spawn_shard: {} send modes for {} steps",
          spec.send_view.size(), spec.steps.size());
  return system.spawn(shard, std::move(spec), std::move(router));
}

}  // namespace taihu::sync
