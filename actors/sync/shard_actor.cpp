#include "actors/sync/shard_actor.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

#include "actors/exception_reason.hpp"
#include "actors/sync/chunk_poller.hpp"
#include "actors/sync/float_buffer.hpp"
#include "actors/sync/send_chunk.hpp"
#include "actors/sync/shard_inbox.hpp"
#include "actors/sync/step_engine.hpp"
#include "collectives/zero_copy.hpp"
#include "core/common/check.hpp"
#include "core/compress/packed.hpp"
#include "core/compress/compressor_states.hpp"
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
  StepEngine engine;   // this rank's steps
  FloatBuffer buffer;  // the gradient in, the sum out
  std::uint64_t iteration_bytes = 0;  // payload this rank sent in the running iteration
  std::vector<std::uint32_t> words;   // precompress's message

  ChunkPoller poller;  // after `router`: gives its hold back before the router goes

  ShardInbox inbox;  // inputs and early chunks

  // Counters for tests and benchmarks.
  std::uint64_t chunks_sent = 0;
  std::uint64_t early_chunks = 0;      // arrived before their step was waiting for them
  std::uint64_t buffer_copies = 0;     // GradientReady buffers that were shared, so copied
};

using Self = shard_actor::stateful_base<ShardState>;

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
  const bool done = s.engine.advance(s.inbox, s.buffer, [self](int to, msg::Chunk chunk) {
    auto& s = self->state;
    s.iteration_bytes += chunk.size() * sizeof(float);
    ++s.chunks_sent;
    send_chunk(self, s.router.get(), s.inbox, to, std::move(chunk));
  });
  if (!done) return wait_for_chunk(self);
  s.poller.release();
  s.running = false;
  s.inbox.complete(s.iteration);
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  self->send(s.inbox.owner(), msg::Reduced{s.spec.bucket, s.iteration, s.spec.rank, s.buffer.release(),
                                   std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), s.iteration_bytes});
  start_next(self);
}

void start_next(Self* self) {
  auto& s = self->state;
  if (!s.inbox.wired() || s.running || !s.inbox.has_input()) return;
  msg::GradientReady ready = s.inbox.next_input();
  s.running = true;
  s.iteration = ready.iteration;
  if (s.buffer.bind(std::move(ready.buffer))) ++s.buffer_copies;
  if (s.spec.precompress) {
    // Dense segments only: the message is the corrected gradient; write it back in place.
    const std::span<float> dense(s.buffer.data(), s.spec.elements);
    s.spec.precompress->compress(dense, 1.0f, s.words);
    std::fill(dense.begin(), dense.end(), 0.0f);
    compress::decompress_add(s.words, dense);
  }
  s.engine.start(s.iteration);
  s.iteration_bytes = 0;
  advance(self);
}

shard_actor::behavior_type shard(Self* self, ShardSpec spec, std::shared_ptr<ChunkRouter> router) {
  auto& st = self->state;
  st.router = std::move(router);
  // The steps and send modes move on: the spec keeps the rest.
  st.engine = StepEngine(spec.bucket, spec.rank, std::move(spec.steps));
  st.buffer = FloatBuffer(std::move(spec.send_view), st.router ? st.router->allocator() : nullptr, spec.sizes_only);
  st.spec = std::move(spec);
  st.poller.attach(st.router.get());
  const ShardSpec& own = st.spec;
  st.inbox.init(fmt::format("shard {}/{}", own.bucket, own.rank), own.bucket, own.elements, own.ranks);
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
        if (!current || !s.engine.awaits(chunk)) ++s.early_chunks;
        s.inbox.keep(std::move(chunk));
        if (current) advance(self);
      },
      [=](msg::poll_atom) {
        if (self->state.poller.poll(self->state.running)) self->send(self, msg::poll_atom_v);
      },
      [=](msg::stats_atom) {
        const auto& s = self->state;
        return msg::ShardStats{s.chunks_sent, s.early_chunks, s.buffer_copies, s.buffer.copied_floats(), 0, 0};
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

std::vector<caf::actor> as_peers(const std::vector<shard_actor>& shards) {
  std::vector<caf::actor> out;
  out.reserve(shards.size());
  for (const auto& s : shards) out.push_back(caf::actor_cast<caf::actor>(s));
  return out;
}

shard_actor spawn_shard(caf::actor_system& system, ShardSpec spec, std::shared_ptr<ChunkRouter> router) {
  require(spec.send_view.size() == spec.steps.size(), "spawn_shard: {} send modes for {} steps",
          spec.send_view.size(), spec.steps.size());
  return system.spawn(shard, std::move(spec), std::move(router));
}

}  // namespace taihu::sync
