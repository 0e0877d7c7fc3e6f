#include "actors/sync/shard_actor.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

#include "core/common/check.hpp"
#include "core/compress/packed.hpp"
#include "core/train/compressor_checkpoint.hpp"
#include "actors/sync/chunk_poller.hpp"
#include "actors/sync/shard_inbox.hpp"
#include "collectives/zero_copy.hpp"
#include "actors/exception_reason.hpp"
#include "actors/sync/chunk_ops.hpp"
#include "messages/type_ids.hpp"

namespace taihu::sync {
namespace {

struct ShardState {
  static inline const char* name = "taihu.shard";

  ShardSpec spec;
  std::shared_ptr<ChunkRouter> router;  // null in-process

  // The running iteration, if any.
  bool running = false;
  std::uint64_t iteration = 0;
  msg::TensorPayload buffer;
  float* data = nullptr;
  std::size_t next_step = 0;
  bool step_sent = false;  // the current step's send went out
  std::uint64_t iteration_bytes = 0;  // payload this rank sent in the running iteration
  std::vector<std::uint32_t> words;   // precompress's message

  ChunkPoller poller;  // after `router`: gives its hold back before the router goes

  ShardInbox inbox;  // inputs and early chunks

  // Counters for tests and benchmarks.
  std::uint64_t chunks_sent = 0;
  std::uint64_t early_chunks = 0;      // arrived before their step was waiting for them
  std::uint64_t buffer_copies = 0;     // GradientReady buffers that were shared, so copied
  std::uint64_t copied_floats = 0;     // by sends that copy
};

using Self = caf::stateful_actor<ShardState>;

void start_next(Self* self);

// The current step waits for a chunk: with a pollable router, look for it
// rather than sleep (actors/sync/chunk_poller.hpp).
void wait_for_chunk(Self* self) {
  if (self->state.poller.wait()) self->send(self, msg::poll_atom_v);
}

// Runs steps until one waits for a chunk that has not arrived; on the last
// step hands the buffer back to the owner and starts a queued iteration.
void advance(Self* self) {
  auto& s = self->state;
  const auto& steps = s.spec.steps;
  while (s.next_step < steps.size()) {
    const collectives::Step& step = steps[s.next_step];
    if (step.sends() && !s.step_sent) {
      // A copy is the snapshot taken before this step's receive writes the
      // buffer; a view needs no snapshot (analyse_zero_copy cleared it).
      auto payload = s.spec.send_view[s.next_step] || s.spec.sizes_only
                         ? s.buffer.slice(step.send.offset, step.send.length)
                         : msg::TensorPayload::copy_of(s.data + step.send.offset, step.send.length,
                                                       s.router ? s.router->allocator() : nullptr);
      s.copied_floats += s.spec.send_view[s.next_step] || s.spec.sizes_only ? 0 : step.send.length;
      s.iteration_bytes += step.send.length * sizeof(float);
      msg::Chunk chunk{s.spec.bucket, s.iteration, s.spec.rank, step.send_seq, step.send.offset, std::move(payload), nullptr};
      if (s.router && s.router->remote(step.send_to)) {
        s.router->send(step.send_to, std::move(chunk));
      } else {
        self->send(s.inbox.peer(step.send_to), std::move(chunk));
      }
      ++s.chunks_sent;
      s.step_sent = true;
    }
    if (step.receives()) {
      const msg::Chunk* found = s.inbox.find(s.iteration, step.recv_from, step.recv_seq);
      if (found == nullptr) return wait_for_chunk(self);
      const msg::Chunk& chunk = *found;
      require(chunk.offset == step.recv.offset && chunk.size() == step.recv.length,
              "shard {}/{}: chunk {} from rank {} holds [{}, +{}), step expects [{}, +{})", s.spec.bucket,
              s.spec.rank, chunk.seq, chunk.sender, chunk.offset, chunk.size(), step.recv.offset,
              step.recv.length);
      if (!s.spec.sizes_only) {  // timing-only shards have no values to combine
        float* out = s.data + step.recv.offset;
        if (step.combine == collectives::Combine::reduce) {
          sync::add_chunk(chunk, out);
        } else {
          sync::copy_chunk(chunk, out);
        }
      }
      s.inbox.drop(s.iteration, step.recv_from, step.recv_seq);  // releases a same-host sender's memory
    }
    s.step_sent = false;
    ++s.next_step;
  }
  s.poller.release();
  s.running = false;
  s.data = nullptr;
  s.inbox.complete(s.iteration);
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  self->send(s.inbox.owner(), msg::Reduced{s.spec.bucket, s.iteration, s.spec.rank, std::move(s.buffer),
                                   std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), s.iteration_bytes});
  s.buffer = {};
  start_next(self);
}

void start_next(Self* self) {
  auto& s = self->state;
  if (!s.inbox.wired() || s.running || !s.inbox.has_input()) return;
  msg::GradientReady ready = s.inbox.next_input();
  s.running = true;
  s.iteration = ready.iteration;
  s.buffer = std::move(ready.buffer);
  if (!s.buffer.unique()) ++s.buffer_copies;
  s.data = s.buffer.mutable_data();
  if (s.spec.precompress) {
    // Dense segments only: the message is the corrected gradient; write it back in place.
    const std::span<float> dense(s.data, s.spec.elements);
    s.spec.precompress->compress(dense, 1.0f, s.words);
    std::fill(dense.begin(), dense.end(), 0.0f);
    compress::decompress_add(s.words, dense);
  }
  s.next_step = 0;
  s.step_sent = false;
  s.iteration_bytes = 0;
  advance(self);
}

caf::behavior shard(Self* self, ShardSpec spec, std::shared_ptr<ChunkRouter> router) {
  self->state.spec = std::move(spec);
  self->state.router = std::move(router);
  self->state.poller.attach(self->state.router.get());
  const ShardSpec& own = self->state.spec;
  self->state.inbox.init(fmt::format("shard {}/{}", own.bucket, own.rank), own.bucket, own.elements, own.ranks);
  // The reason travels in the down_msg, so an owner can say which shard failed and why.
  self->set_exception_handler(exception_reason);
  return {
      [=](msg::ShardInit& init) {
        auto& s = self->state;
        // No peers at all is fine when a router takes every chunk (the network
        // simulator, actors/sim/: P shards x P handles would not fit at 40,960 ranks).
        s.inbox.wire(std::move(init), s.router != nullptr);
        start_next(self);
      },
      [=](msg::GradientReady& ready) {
        auto& s = self->state;
        s.inbox.queue(std::move(ready), s.running ? std::optional{s.iteration} : std::nullopt);
        start_next(self);
      },
      [=](msg::Chunk& chunk) {
        auto& s = self->state;
        const bool current = s.running && chunk.iteration == s.iteration;
        if (!current || s.next_step >= s.spec.steps.size() ||
            s.spec.steps[s.next_step].recv_from != chunk.sender ||
            s.spec.steps[s.next_step].recv_seq != chunk.seq) {
          ++s.early_chunks;
        }
        s.inbox.keep(std::move(chunk));
        if (current) advance(self);
      },
      [=](msg::poll_atom) {
        if (self->state.poller.poll(self->state.running)) self->send(self, msg::poll_atom_v);
      },
      [=](msg::stats_atom) {
        const auto& s = self->state;
        return caf::make_message(s.chunks_sent, s.early_chunks, s.buffer_copies, s.copied_floats);
      },
      // The precompressor's residuals and momentum, for checkpoints (none: empty).
      [=](msg::compressor_atom) {
        const auto& s = self->state;
        return s.spec.precompress ? encode_states(s.spec.precompress->state()) : std::string{};
      },
      [=](msg::compressor_atom, const std::string& bytes) {
        auto& s = self->state;
        require(s.spec.precompress != nullptr, "shard {}/{}: compressor state for a shard without a compressor",
                s.spec.bucket, s.spec.rank);
        require(!s.running && !s.inbox.has_input(), "shard {}/{}: compressor state restored mid-iteration", s.spec.bucket,
                s.spec.rank);
        // States of another layout (e.g. after a regroup that re-planned the
        // compression): the shard goes on from where it is, and says so.
        try {
          s.spec.precompress->restore(decode_states(bytes));
        } catch (const Error& e) {
          spdlog::warn("{}: compressor state not restored: {}", s.inbox.name(), e.what());
          return false;
        }
        return true;
      },
  };
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

caf::actor spawn_shard(caf::actor_system& system, ShardSpec spec, std::shared_ptr<ChunkRouter> router) {
  require(spec.send_view.size() == spec.steps.size(), "spawn_shard: {} send modes for {} steps",
          spec.send_view.size(), spec.steps.size());
  return system.spawn(shard, std::move(spec), std::move(router));
}

}  // namespace taihu::sync
